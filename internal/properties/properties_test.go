package properties

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

func load(t *testing.T, text string) *Properties {
	t.Helper()
	p := New()
	if err := p.Load(strings.NewReader(text), "f.properties"); err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

func TestLoadSyntax(t *testing.T) {
	tests := []struct {
		name string
		text string
		key  string
		want string
		line int
	}{
		{"equals", "a=b", "a", "b", 1},
		{"colon", "a:b", "a", "b", 1},
		{"space", "a b", "a", "b", 1},
		{"spaces around equals", "  a  =  b c  ", "a", "b c", 1},
		{"tab separator", "a\tb", "a", "b", 1},
		{"empty value", "a=", "a", "", 1},
		{"key only", "a", "a", "", 1},
		{"hash comment skipped", "# x=y\na=1", "a", "1", 2},
		{"bang comment skipped", "! x=y\na=1", "a", "1", 2},
		{"indented comment", "   # x\na=1", "a", "1", 2},
		{"blank lines", "\n\n  \na=1", "a", "1", 4},
		{"continuation", "a=one, \\\n    two", "a", "one, two", 1},
		{"continuation line counted", "a=1\\\n2\nb=3", "b", "3", 3},
		{"escaped backslash is not a continuation", "a=x\\\\\nb=2", "a", `x\`, 1},
		{"escapes", `a=t\tn\nr\rf\f`, "a", "t\tn\nr\rf\f", 1},
		{"unicode escape", `a=\u00e9t\u00E9`, "a", "été", 1},
		{"escaped separator in key", `a\=b=c`, "a=b", "c", 1},
		{"escaped space in key", `a\ b=c`, "a b", "c", 1},
		{"escaped other char", `a=\q`, "a", "q", 1},
		{"later wins", "a=1\na=2", "a", "2", 2},
		{"equals inside value", "a=b=c", "a", "b=c", 1},
		{"dotted key", "exponential.percentile=95", "exponential.percentile", "95", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := load(t, tc.text)
			if got := p.String(tc.key, "<unset>"); got != tc.want {
				t.Errorf("value of %q = %q, want %q", tc.key, got, tc.want)
			}
			src, ok := p.SourceOf(tc.key)
			if !ok || src.File != "f.properties" || src.Line != tc.line {
				t.Errorf("source %+v (set %v), want f.properties:%d", src, ok, tc.line)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"bad unicode", "a=\\u12", "f.properties:1"},
		{"bad unicode hex", "x=1\na=\\uzzzz", "f.properties:2"},
		{"empty key", "=value", "empty key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := New().Load(strings.NewReader(tc.text), "f.properties")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadFileAndOrder(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	b := filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("x=1\ny=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("# b\ny=2\nz=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := New()
	for _, f := range []string{a, b} {
		if err := p.LoadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.ParseOverride("z = 3"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key, value, source string
	}{
		{"x", "1", a + ":1"},
		{"y", "2", b + ":2"},
		{"z", "3", "-p"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			src, _ := p.SourceOf(tc.key)
			if v := p.String(tc.key, ""); v != tc.value || src.String() != tc.source {
				t.Errorf("%s = %q from %s, want %q from %s", tc.key, v, src, tc.value, tc.source)
			}
		})
	}
	t.Run("keys in first-set order", func(t *testing.T) {
		if got := strings.Join(p.Keys(), ","); got != "x,y,z" {
			t.Errorf("Keys() = %s", got)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		if err := New().LoadFile(filepath.Join(dir, "nope")); err == nil {
			t.Error("no error for a missing file")
		}
	})
}

func TestParseOverride(t *testing.T) {
	tests := []struct {
		arg       string
		key, want string
		ok        bool
	}{
		{"a=b", "a", "b", true},
		{" a = b ", "a", "b", true},
		{"a=b=c", "a", "b=c", true},
		{"a=", "a", "", true},
		{"novalue", "", "", false},
		{"=x", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			p := New()
			err := p.ParseOverride(tc.arg)
			if (err == nil) != tc.ok {
				t.Fatalf("error %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && p.String(tc.key, "<unset>") != tc.want {
				t.Errorf("%s = %q, want %q", tc.key, p.String(tc.key, ""), tc.want)
			}
		})
	}
}

func TestTypedGetters(t *testing.T) {
	p := load(t, "i=42\nneg=-7\nbad=4x\nf=0.25\nb1=true\nb2=No\nb3=sure\nd1=30\nd2=1m30s\nd3=1.5\nd4=later")
	t.Run("int", func(t *testing.T) {
		if v, err := p.Int("i", 0); v != 42 || err != nil {
			t.Errorf("Int(i) = %d, %v", v, err)
		}
		if v, err := p.Int("neg", 0); v != -7 || err != nil {
			t.Errorf("Int(neg) = %d, %v", v, err)
		}
		if v, err := p.Int("unset", 9); v != 9 || err != nil {
			t.Errorf("Int(unset) = %d, %v", v, err)
		}
		if _, err := p.Int("bad", 0); err == nil || !strings.Contains(err.Error(), "f.properties:3: property bad=\"4x\"") {
			t.Errorf("Int(bad) error %v", err)
		}
	})
	t.Run("float", func(t *testing.T) {
		if v, err := p.Float("f", 0); v != 0.25 || err != nil {
			t.Errorf("Float(f) = %g, %v", v, err)
		}
		if _, err := p.Float("bad", 0); err == nil {
			t.Error("Float(bad) no error")
		}
	})
	t.Run("bool", func(t *testing.T) {
		if v, err := p.Bool("b1", false); !v || err != nil {
			t.Errorf("Bool(b1) = %v, %v", v, err)
		}
		if v, err := p.Bool("b2", true); v || err != nil {
			t.Errorf("Bool(b2) = %v, %v", v, err)
		}
		if _, err := p.Bool("b3", false); err == nil || !strings.Contains(err.Error(), "b3") {
			t.Errorf("Bool(b3) error %v", err)
		}
	})
	t.Run("duration", func(t *testing.T) {
		cases := []struct {
			key  string
			want time.Duration
		}{
			{"d1", 30 * time.Second},
			{"d2", 90 * time.Second},
			{"d3", 1500 * time.Millisecond},
			{"unset", 5 * time.Second},
		}
		for _, c := range cases {
			if v, err := p.Duration(c.key, 5*time.Second, time.Second); v != c.want || err != nil {
				t.Errorf("Duration(%s) = %v, %v; want %v", c.key, v, err, c.want)
			}
		}
		if _, err := p.Duration("d4", 0, time.Millisecond); err == nil || !strings.Contains(err.Error(), "milliseconds") {
			t.Errorf("Duration(d4) error %v", err)
		}
	})
}

func TestDeclareAndUnknown(t *testing.T) {
	p := load(t, "known=1\nread=2\nredis.addr=x\nstray=3\nother=4")
	p.Declare("known")
	p.String("read", "")
	p.DeclarePrefix("redis.")
	got := p.Unknown()
	sort.Strings(got) // the order is the package's business; the set is checked here
	want := []string{"other (f.properties:5)", "stray (f.properties:4)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Unknown() = %v, want %v", got, want)
	}
	t.Run("clone keeps declarations", func(t *testing.T) {
		c := p.Clone()
		c.Declare("stray")
		if len(c.Unknown()) != 1 || len(p.Unknown()) != 2 {
			t.Errorf("clone Unknown %v, original %v", c.Unknown(), p.Unknown())
		}
	})
}

func TestErrorAndSources(t *testing.T) {
	p := load(t, "a=1")
	p.Set("b", "2")
	p.SetDefault("c", "3")
	p.SetDefault("a", "ignored")
	tests := []struct {
		key, want string
	}{
		{"a", `f.properties:1: property a="1": boom`},
		{"b", `-p: property b="2": boom`},
		{"c", `default: property c="3": boom`},
		{"d", `property d: boom`},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			if got := p.Error(tc.key, "boom").Error(); got != tc.want {
				t.Errorf("Error = %q, want %q", got, tc.want)
			}
		})
	}
	if p.String("a", "") != "1" {
		t.Error("SetDefault overwrote a set key")
	}
}

func TestWriteRoundTrip(t *testing.T) {
	p := load(t, "b=two words\na=x\\\\y\nkey\\ with\\=sep=v\nnl=line\\nbreak")
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	q := New()
	if err := q.Load(&buf, "round"); err != nil {
		t.Fatalf("reload: %v\n%s", err, buf.String())
	}
	for k, v := range p.Map() {
		if got := q.String(k, "<unset>"); got != v {
			t.Errorf("%q: %q after round trip, want %q", k, got, v)
		}
	}
	if len(q.Keys()) != len(p.Keys()) {
		t.Errorf("keys %v after round trip, want %v", q.Keys(), p.Keys())
	}
}

// TestLoadRefusesBinary: a binary file given to -P is not read as
// properties (its garbage would otherwise become keys, and the error would
// name an unrelated property).
func TestLoadRefusesBinary(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"NUL", "recordcount=1\nab\x00cd=1\n", "f:2: not a properties file: byte 0x00 at column 3"},
		{"invalid UTF-8", "\x86\xffkey=1\n", "f:1: not a properties file: byte 0x86 at column 1"},
		{"control byte", "key=\x01\n", "f:1: not a properties file: byte 0x01"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := New().Load(strings.NewReader(tc.text), "f")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want one starting %q", err, tc.want)
			}
		})
	}
	p := New()
	if err := p.Load(strings.NewReader("a=b\tc\r\nnote=caf\u00e9\n"), "f"); err != nil {
		t.Errorf("text with a tab, CR and UTF-8 refused: %v", err)
	}
}

// TestSourceOrigin: a value set from a flag or a scenario field names it.
func TestSourceOrigin(t *testing.T) {
	p := New()
	p.SetFrom("threadcount", "0", Source{Origin: "-threads"})
	if err := p.Error("threadcount", "allowed 1..10000"); err == nil || err.Error() != `-threads: property threadcount="0": allowed 1..10000` {
		t.Errorf("error %v", err)
	}
}
