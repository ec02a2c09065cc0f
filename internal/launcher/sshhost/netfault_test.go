package sshhost

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDropRuleset(t *testing.T) {
	tests := []struct {
		name    string
		owner   string
		to      string
		from    []string
		want    string // a line the script must hold
		wantErr string
	}{
		{name: "ipv4 sorted and deduplicated", owner: "pabc123", to: "198.18.0.4", from: []string{"198.18.0.6", "198.18.0.5", "198.18.0.6"},
			want: "\t\tip saddr { 198.18.0.5, 198.18.0.6 } ip daddr 198.18.0.4 drop\n"},
		{name: "ipv6", owner: "p1", to: "fd00::4", from: []string{"fd00::5"},
			want: "\t\tip6 saddr { fd00::5 } ip6 daddr fd00::4 drop\n"},
		{name: "chain hooks input before the host's filter", owner: "pabc123", to: "10.0.0.1", from: []string{"10.0.0.2"},
			want: "\t\ttype filter hook input priority filter - 10; policy accept;\n"},
		{name: "owner with a space", owner: "p a", to: "10.0.0.1", from: []string{"10.0.0.2"}, wantErr: "owner"},
		{name: "owner that could end the script", owner: "p}\ndelete", to: "10.0.0.1", from: []string{"10.0.0.2"}, wantErr: "owner"},
		{name: "host name, not an IP", owner: "p1", to: "node4.example", from: []string{"10.0.0.2"}, wantErr: "not an IP"},
		{name: "bad source", owner: "p1", to: "10.0.0.1", from: []string{"10.0.0.2; flush ruleset"}, wantErr: "not an IP"},
		{name: "mixed families", owner: "p1", to: "10.0.0.1", from: []string{"fd00::1"}, wantErr: "IPv6"},
		{name: "no sources", owner: "p1", to: "10.0.0.1", wantErr: "no source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dropRuleset(tt.owner, tt.to, tt.from)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one about %q (script %q)", err, tt.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got, "table inet faultbench {\n\tchain "+tt.owner+" {\n") || !strings.HasSuffix(got, "\t}\n}\n") {
				t.Errorf("script does not add chain %s to table inet faultbench:\n%s", tt.owner, got)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("script lacks %q:\n%s", tt.want, got)
			}
		})
	}
}

func TestLossRuleset(t *testing.T) {
	tests := []struct {
		name    string
		to      string
		p       float64
		port    int
		want    []string
		wantErr string
	}{
		{name: "20 percent, SSH spared", to: "198.18.0.4", p: 0.2, port: 22, want: []string{
			"\t\ttcp dport 22 accept\n\t\ttcp sport 22 accept\n", "\t\tip daddr 198.18.0.4 numgen random mod 10000 < 2000 drop\n"}},
		{name: "tiny fraction rounds up to one in 10000", to: "198.18.0.4", p: 0.00001, port: 2222, want: []string{
			"tcp dport 2222 accept", "numgen random mod 10000 < 1 drop"}},
		{name: "ipv6", to: "fd00::4", p: 0.5, port: 22, want: []string{"ip6 daddr fd00::4 numgen random mod 10000 < 5000 drop"}},
		{name: "all packets: no numgen (its values end at 9999)", to: "198.18.0.4", p: 1, port: 22, want: []string{"\t\tip daddr 198.18.0.4 drop\n"}},
		{name: "zero", to: "198.18.0.4", p: 0, port: 22, wantErr: "fraction"},
		{name: "more than all", to: "198.18.0.4", p: 1.5, port: 22, wantErr: "fraction"},
		{name: "not an IP", to: "h4", p: 0.2, port: 22, wantErr: "not an IP"},
		{name: "no SSH port", to: "198.18.0.4", p: 0.2, port: 0, wantErr: "SSH port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lossRuleset("lx1", tt.to, tt.p, tt.port)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("script lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestRemoveRuleset(t *testing.T) {
	tests := []struct {
		name   string
		others []string
		want   string
	}{
		{name: "last chain takes the table along", want: "delete chain inet faultbench pabc\ndelete table inet faultbench\n"},
		{name: "other faults keep the table", others: []string{"pdef"}, want: "delete chain inet faultbench pabc\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := removeRuleset("pabc", tt.others); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestChainsOf(t *testing.T) {
	listing := "table inet faultbench {\n\tchain pzz {\n\t\ttype filter hook input priority filter - 10; policy accept;\n\t\tip saddr { 1.2.3.4 } ip daddr 1.2.3.5 drop\n\t}\n\tchain pab {\n\t}\n}\n"
	if got, want := chainsOf(listing), []string{"pab", "pzz"}; !reflect.DeepEqual(got, want) {
		t.Errorf("chains %v, want %v", got, want)
	}
}

// fakeNFT is a Runner that plays nft on a host holding tables.
type fakeNFT struct {
	tables string // output of nft list tables inet
	table  string // output of nft list table inet faultbench
	fail   error  // every call fails with it
	calls  []string
}

func (f *fakeNFT) run(_ context.Context, argv []string, stdin string) ([]byte, error) {
	f.calls = append(f.calls, strings.Join(argv, " ")+" <<"+stdin)
	if f.fail != nil {
		return nil, f.fail
	}
	switch strings.Join(argv, " ") {
	case "nft list tables inet":
		return []byte(f.tables), nil
	case "nft list table inet faultbench":
		return []byte(f.table), nil
	}
	return nil, nil
}

func TestClearNetAndOwners(t *testing.T) {
	tests := []struct {
		name        string
		nft         fakeNFT
		wantCleared bool
		wantOwners  []string
		wantCalls   int // by ClearNet
	}{
		{name: "table in place", nft: fakeNFT{tables: "table inet filter\ntable inet faultbench\n", table: "table inet faultbench {\n\tchain pab {\n\t}\n}\n"},
			wantCleared: true, wantOwners: []string{"pab"}, wantCalls: 2},
		{name: "no table", nft: fakeNFT{tables: "table inet filter\n"}, wantCalls: 1},
		{name: "no nft on the host", nft: fakeNFT{fail: errors.New("exit status 127: nft: command not found")}, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.nft
			if tt.nft.fail == nil {
				owners, err := NetOwners(context.Background(), f.run)
				if err != nil || !reflect.DeepEqual(owners, tt.wantOwners) {
					t.Errorf("owners %v, %v; want %v", owners, err, tt.wantOwners)
				}
			}
			f.calls = nil
			cleared, err := ClearNet(context.Background(), f.run)
			if err != nil || cleared != tt.wantCleared || len(f.calls) != tt.wantCalls {
				t.Fatalf("ClearNet: %v, %v after calls %q; want %v after %d calls", cleared, err, f.calls, tt.wantCleared, tt.wantCalls)
			}
			if cleared && f.calls[1] != "nft -f - <<table inet faultbench\ndelete table inet faultbench\n" {
				t.Errorf("delete call %q", f.calls[1])
			}
		})
	}
}
