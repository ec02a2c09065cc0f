package wire

import (
	"reflect"
	"testing"
	"time"
)

func TestTxnRecordRoundTrip(t *testing.T) {
	r := TxnRecord{TS: 42, ClientID: 7, TxnID: 9, Writes: []Write{
		{Table: "t", Key: "user1", Fields: []Field{{Name: "a", Value: []byte("x")}, {Name: "b", Value: []byte{}}}},
		{Table: "t", Key: "user2", Delete: true},
	}}
	b := AppendTxnRecord(nil, &r)
	if TSOf(b) != 42 {
		t.Errorf("TSOf = %d", TSOf(b))
	}
	got, err := DecodeTxnRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.TS != r.TS || got.ClientID != r.ClientID || got.TxnID != r.TxnID || len(got.Writes) != 2 ||
		!got.Writes[1].Delete || string(got.Writes[0].Fields[0].Value) != "x" || got.Writes[0].Fields[1].Name != "b" {
		t.Errorf("round trip: %+v", got)
	}
	for i := 1; i < len(b); i++ {
		if _, err := DecodeTxnRecord(b[:i]); err == nil {
			t.Fatalf("truncated record of %d bytes decoded", i)
		}
	}
}

func TestSplits(t *testing.T) {
	rs := DefaultSplits(4)
	var m RegionMap
	for _, r := range rs {
		m.Regions = append(m.Regions, RegionInfo{Region: r})
	}
	for key, want := range map[string]int{"": 0, "a": 0, "user1": 0, "user29": 0, "user30": 1, "user5": 1, "user51": 2, "user9": 3, "zzz": 3} {
		if got := m.Find(key); got != want {
			t.Errorf("Find(%q) = %d, want %d (%v)", key, got, want, rs)
		}
	}
	if one := DefaultSplits(1); !reflect.DeepEqual(one, []Region{{ID: 0}}) {
		t.Errorf("one region: %+v", one)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Persistence: Async, Heartbeat: time.Second, SessionTimeout: 3 * time.Second, WALSyncInterval: time.Second, MemstoreFlushBytes: 1 << 20}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := ok
	bad.SessionTimeout = time.Second
	if bad.Validate() == nil {
		t.Error("session timeout below two heartbeats accepted")
	}
	bad = ok
	bad.Persistence = "fast"
	if bad.Validate() == nil {
		t.Error("unknown persistence accepted")
	}
}
