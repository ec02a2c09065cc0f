package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func sampleOps() []Op {
	return []Op{
		{Process: 0, Name: "txn", Invoke: 10, Complete: 20, Outcome: OK, Mops: []Mop{
			{F: Append, Key: "x", Value: 1},
			{F: Read, Key: "x", IsList: true, List: []int64{1}},
			{F: Read, Key: "y", IsList: true, List: []int64{}},
		}},
		{Process: 1, Name: "read", Invoke: 11, Complete: 21, Outcome: OK, Mops: []Mop{{F: Read, Key: "k", HasValue: true, Value: -7}}},
		{Process: 2, Name: "read", Invoke: 12, Complete: 22, Outcome: OK, Mops: []Mop{{F: Read, Key: "k"}}},
		{Process: 3, Name: "cas", Invoke: 13, Complete: 30, Outcome: Unknown, Error: "timeout", Mops: []Mop{{F: CAS, Key: "k", Value: 1, New: 2}}},
		{Process: 4, Name: "transfer", Invoke: 14, Complete: 31, Outcome: Fail, Error: "conflict", Mops: []Mop{
			{F: Add, Key: "a", Value: -5}, {F: Add, Key: "b", Value: 5}}},
		{Process: 5, Name: "write", Invoke: 15, Complete: 32, Outcome: OK, Mops: []Mop{{F: Write, Key: "quote\"back\\slash\n\x01é\xff", Value: 9}}},
		{Process: 6, Invoke: 16, Complete: 16, Outcome: OK},
	}
}

func encode(t *testing.T, ops []Op) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		if err := w.Write(&ops[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll(t *testing.T, data []byte) ([]Op, bool, error) {
	t.Helper()
	r := NewReader(bytes.NewReader(data))
	var ops []Op
	for {
		var op Op
		err := r.Next(&op)
		if errors.Is(err, io.EOF) {
			return ops, r.Torn(), nil
		}
		if err != nil {
			return ops, r.Torn(), err
		}
		ops = append(ops, op)
	}
}

func TestRoundTrip(t *testing.T) {
	want := sampleOps()
	data := encode(t, want)
	got, torn, err := readAll(t, data)
	if err != nil || torn {
		t.Fatalf("read: %v torn %v\n%s", err, torn, data)
	}
	// Invalid UTF-8 in a key comes back as U+FFFD, as encoding/json does.
	want[5].Mops[0].Key = strings.ToValidUTF8(want[5].Mops[0].Key, "\ufffd")
	want[6].Mops = []Mop{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v\n%s", got, want, data)
	}
	if !bytes.HasPrefix(data, []byte(`{"faultbench_history":1,`)) {
		t.Errorf("no header line: %s", data)
	}
}

func TestReaderErrors(t *testing.T) {
	good := encode(t, sampleOps()[:2])
	tests := []struct {
		name    string
		data    string
		wantOps int
		torn    bool
		wantErr string
	}{
		{"torn last line skipped", string(good) + `{"p":3,"s":1,"e":2,"o":"o`, 2, true, ""},
		{"last line whole without newline kept", string(good) + `{"p":3,"s":1,"e":2,"o":"ok","m":[]}`, 3, false, ""},
		{"bad line in the middle", string(good) + "{oops\n" + `{"p":3,"s":1,"e":2,"o":"ok","m":[]}` + "\n", 2, false, "line 4"},
		{"unknown outcome", `{"p":3,"s":1,"e":2,"o":"maybe","m":[]}` + "\n", 0, false, "unknown outcome"},
		{"no process", `{"s":1,"e":2,"o":"ok","m":[]}` + "\n", 0, false, "no process"},
		{"complete before invoke", `{"p":1,"s":5,"e":2,"o":"ok","m":[]}` + "\n", 0, false, "before its invoke"},
		{"unknown function", `{"p":1,"s":1,"e":2,"o":"ok","m":[{"f":"zap","k":"x"}]}` + "\n", 0, false, "unknown function"},
		{"newer version", `{"faultbench_history":2}` + "\n", 0, false, "version 2"},
		{"empty file", "", 0, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, torn, err := readAll(t, []byte(tt.data))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if len(ops) != tt.wantOps || torn != tt.torn {
				t.Fatalf("got %d ops torn %v, want %d torn %v", len(ops), torn, tt.wantOps, tt.torn)
			}
		})
	}
}

// TestConcurrentWriters: lines of concurrent writers never interleave and
// none is lost (run with -race).
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const workers, per = 8, 500
	var wg sync.WaitGroup
	for p := range workers {
		wg.Go(func() {
			for i := range per {
				op := Op{Process: p, Name: "txn", Invoke: int64(i), Complete: int64(i + 1), Mops: []Mop{
					{F: Append, Key: fmt.Sprint("k", i%7), Value: int64(p*per + i)},
					{F: Read, Key: "k", IsList: true, List: []int64{1, 2, 3}}}}
				if err := w.Write(&op); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if w.Count() != workers*per {
		t.Errorf("Count = %d", w.Count())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ops, torn, err := ReadFile(path)
	if err != nil || torn {
		t.Fatalf("%v torn %v", err, torn)
	}
	seen := map[int64]bool{}
	for _, op := range ops {
		seen[op.Mops[0].Value] = true
	}
	if len(ops) != workers*per || len(seen) != workers*per {
		t.Fatalf("read %d ops, %d distinct, want %d", len(ops), len(seen), workers*per)
	}
}

// TestFlushedWithoutClose: operations written more than FlushInterval ago
// are on disk although the writer was never closed (a killed run).
func TestFlushedWithoutClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	op := Op{Process: 1, Mops: []Mop{{F: Write, Key: "x", Value: 1}}}
	if err := w.Write(&op); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.lastFlush -= FlushInterval // as if the interval had passed
	w.mu.Unlock()
	if err := w.Write(&op); err != nil {
		t.Fatal(err)
	}
	ops, _, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 {
		t.Fatalf("%d ops on disk before Close, want 2", len(ops))
	}
}

func writeFile(t *testing.T, dir, name string, ops []Op) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, encode(t, ops), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a", []Op{
		{Process: 0, Invoke: 0, Complete: 10, Mops: []Mop{{F: Write, Key: "x", Value: 1}}},
		{Process: 2, Invoke: 5, Complete: 30, Mops: []Mop{{F: Write, Key: "x", Value: 2}}},
	})
	b := writeFile(t, dir, "b", []Op{
		{Process: 0, Invoke: 1, Complete: 15, Mops: []Mop{{F: Write, Key: "x", Value: 3}}},
		{Process: 1, Invoke: 2, Complete: 5, Mops: []Mop{{F: Write, Key: "x", Value: 4}}},
	})
	// a torn source keeps its whole lines
	c := filepath.Join(dir, "c")
	if err := os.WriteFile(c, append(encode(t, []Op{{Process: 0, Invoke: 3, Complete: 4}}), `{"p":0,"s":`...), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := Merge(context.Background(), &out, []Source{{Path: a}, {Path: b, OffsetNs: 100}, {Path: c}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.ProcessBase, []int{0, 3, 5}) || res.Ops != 5 || len(res.Torn) != 1 {
		t.Fatalf("result %+v", res)
	}
	ops, _, err := readAll(t, out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	type pt struct {
		p      int
		s, e   int64
		hasMop bool
	}
	var got []pt
	for _, op := range ops {
		got = append(got, pt{op.Process, op.Invoke, op.Complete, len(op.Mops) > 0})
	}
	want := []pt{{5, 3, 4, false}, {0, 0, 10, true}, {2, 5, 30, true}, {4, 102, 105, true}, {3, 101, 115, true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged\n got %v\nwant %v", got, want)
	}
	if _, err := Merge(context.Background(), io.Discard, []Source{{Path: filepath.Join(dir, "missing")}}); err == nil {
		t.Fatal("merging a missing file: no error")
	}
}

func BenchmarkAppendLine(b *testing.B) {
	op := benchOp()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendLine(buf[:0], &op)
	}
}

// BenchmarkWrite is the cost a client pays per recorded operation, with
// all CPUs writing concurrently into one file.
func BenchmarkWrite(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w, err := NewWriter(f)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		op := benchOp()
		for pb.Next() {
			if err := w.Write(&op); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

func benchOp() Op {
	return Op{Process: 17, Name: "txn", Invoke: 123456789012, Complete: 123456999999, Outcome: OK, Mops: []Mop{
		{F: Append, Key: "k1234", Value: 987654},
		{F: Read, Key: "k1235", IsList: true, List: []int64{1, 2, 3, 4, 5, 6, 7, 8}},
		{F: Append, Key: "k1236", Value: 987655},
		{F: Read, Key: "k1234", IsList: true, List: []int64{11, 12, 987654}},
	}}
}

func BenchmarkRead(b *testing.B) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	op := benchOp()
	for range 10000 {
		_ = w.Write(&op)
	}
	_ = w.Flush()
	data := buf.Bytes()
	b.SetBytes(int64(len(data)) / 10000)
	b.ReportAllocs()
	r := NewReader(bytes.NewReader(data))
	var got Op
	for b.Loop() {
		if err := r.Next(&got); errors.Is(err, io.EOF) {
			r = NewReader(bytes.NewReader(data))
		} else if err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseAnyJSON: the hand-written decoder takes any valid JSON of the
// line's shape, not only what AppendLine writes.
func TestParseAnyJSON(t *testing.T) {
	line := ` { "extra" : {"a":[1,2.5e3,"x",null,true]}, "m" : [ {"l":[ 3 , -4 ],"k":"a\u00e9\ud83d\ude00\n","f":"r"},
		{"f":"r","k":"b","l":null},{"f":"r","k":"c","v":0} ] , "o":"unknown","e":9,"s":-1,"p":7,"n":"t\"x"} `
	var op Op
	if err := parseLine([]byte(line), &op); err != nil {
		t.Fatal(err)
	}
	want := Op{Process: 7, Name: `t"x`, Invoke: -1, Complete: 9, Outcome: Unknown, Mops: []Mop{
		{F: Read, Key: "aé😀\n", IsList: true, List: []int64{3, -4}},
		{F: Read, Key: "b"},
		{F: Read, Key: "c", HasValue: true},
	}}
	if !reflect.DeepEqual(op, want) {
		t.Fatalf("got %+v\nwant %+v", op, want)
	}
	for _, bad := range []string{`{"p":1,"o":"ok","s":1.5}`, `{"p":1,"o":"ok"} x`, `{"p":1,"o":"ok","m":[{"k":"\q"}]}`,
		`{"p":99999999999999999999,"o":"ok"}`, `{"p":1 "o":"ok"}`, `{"p":1,"o":"ok","s":2,"e":1}`} {
		if err := parseLine([]byte(bad), &op); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestEachReuses: Each's reused operation holds each line exactly as
// ReadFile's fresh ones do, and Merge keeps its own copies.
func TestEachReuses(t *testing.T) {
	ops := []Op{
		{Process: 1, Mops: []Mop{{F: Read, Key: "x", IsList: true, List: []int64{1, 2, 3}}, {F: Append, Key: "y", Value: 4}}},
		{Process: 2, Mops: []Mop{{F: Read, Key: "x", IsList: true, List: []int64{}}, {F: Read, Key: "y", IsList: true, List: []int64{9}}}},
		{Process: 3, Mops: []Mop{{F: Write, Key: "z", Value: 5}}},
		{Process: 4, Mops: []Mop{{F: Read, Key: "x", IsList: true, List: []int64{7, 8}}, {F: Read, Key: "z", HasValue: true, Value: 5}, {F: CAS, Key: "z", Value: 5, New: 6}}},
	}
	dir := t.TempDir()
	path := writeFile(t, dir, "h", ops)
	var got []string
	if _, err := Each(context.Background(), path, func(op *Op) error {
		got = append(got, string(AppendLine(nil, op)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range ops {
		want = append(want, string(AppendLine(nil, &ops[i])))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Each\n got %q\nwant %q", got, want)
	}
	var out bytes.Buffer
	if _, err := Merge(context.Background(), &out, []Source{{Path: path}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), encode(t, ops)) {
		t.Fatalf("merge of one source changed it:\n%s", out.Bytes())
	}
}
