package coord

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// The coordinator's metadata: what the paper keeps in ZooKeeper (server
// membership, the region map with the recovery state of regions whose
// host failed) and the id reservation. It is small and changes rarely
// (registration, failure, reassignment, a region coming online), so it is
// rewritten whole and atomically on every change. Per-heartbeat values
// (T_F, T_P) are not kept: a restarted coordinator takes T_P of a server
// that does not come back as 0, i.e. replays everything still in the
// recovery log.

const metaName = "meta.json"

// idBlock is how many client and server ids one reservation covers.
const idBlock = 1024

type metaFile struct {
	// IDsBelow: every id handed out so far is below it.
	IDsBelow uint64 `json:"ids_below"`
	// MapVersion is the region map's version: clients and servers ignore
	// maps older than one they have seen, so it never goes back.
	MapVersion uint64       `json:"map_version"`
	Started    bool         `json:"started"`
	RR         int          `json:"rr"`
	Servers    []metaServer `json:"servers"`
	Regions    []metaRegion `json:"regions"`
}

type metaServer struct {
	ID       uint64 `json:"id"`
	Name     string `json:"name"`
	Addr     string `json:"addr"`
	WALDir   string `json:"wal_dir"`
	Live     bool   `json:"live"`
	FailedTP uint64 `json:"failed_tp,omitempty"`
	Regions  int    `json:"regions,omitempty"`
}

type metaRegion struct {
	ID          wire.RegionID `json:"id"`
	Host        uint64        `json:"host"`
	Online      bool          `json:"online"`
	Opening     bool          `json:"opening"`
	Epoch       uint64        `json:"epoch"`
	PendingWALs []string      `json:"pending_wals,omitempty"`
	NeedReplay  bool          `json:"need_replay,omitempty"`
	ReplayFrom  uint64        `json:"replay_from,omitempty"`
	FailedHosts []uint64      `json:"failed_hosts,omitempty"`
}

func (c *Coordinator) metaPath() string { return filepath.Join(c.cfg.Dir, metaName) }

// saveMetaLocked writes the metadata atomically (temp file, fsync, rename,
// fsync of the directory); mu held. A failure is logged: the coordinator
// keeps serving, and a restart would see the previous version.
func (c *Coordinator) saveMetaLocked() {
	if c.crashed {
		return
	}
	m := metaFile{IDsBelow: c.idsBelow, MapVersion: c.mapVersion, Started: c.started, RR: c.rr}
	for _, s := range c.servers {
		m.Servers = append(m.Servers, metaServer{ID: s.id, Name: s.name, Addr: s.addr, WALDir: s.walDir, Live: s.live,
			FailedTP: s.failedTP, Regions: s.regions})
	}
	for _, r := range c.regions {
		m.Regions = append(m.Regions, metaRegion{ID: r.info.ID, Host: r.host, Online: r.online, Opening: r.opening, Epoch: r.epoch,
			PendingWALs: r.pendingWALs, NeedReplay: r.needReplay, ReplayFrom: r.replayFrom, FailedHosts: r.failedHosts})
	}
	b, err := json.MarshalIndent(&m, "", " ")
	if err == nil {
		err = writeAtomic(c.metaPath(), b, !c.cfg.NoSync)
	}
	if err != nil {
		c.failStopLocked(fmt.Errorf("saving the metadata: %w", err))
	}
}

// writeAtomic replaces path with b: temp file, fsync, rename, fsync dir.
func writeAtomic(path string, b []byte, sync bool) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil && sync {
		var d *os.File
		if d, err = os.Open(filepath.Dir(path)); err == nil {
			err = d.Sync()
			d.Close()
		}
	}
	return err
}

// loadMeta reads the metadata; ok is false when there is none (first start).
func loadMeta(path string) (m metaFile, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("metadata: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, false, fmt.Errorf("metadata %s: %w", path, err)
	}
	return m, true, nil
}

// restoreMeta rebuilds membership and the region map from m; called from
// New before anything runs. Servers that were live are live again, with
// T_P 0 (unknown) until their first heartbeat; their session timeout
// counts from the restart. Failed servers whose regions are still being
// recovered keep the T_P they failed with.
func (c *Coordinator) restoreMeta(m metaFile) error {
	if len(m.Regions) != len(c.regions) {
		return fmt.Errorf("metadata has %d regions, configured %d", len(m.Regions), len(c.regions))
	}
	c.started, c.rr = m.Started, m.RR
	c.mapVersion = m.MapVersion + 1000
	c.idsBelow = max(c.idsBelow, m.IDsBelow)
	c.nextID = max(c.nextID, m.IDsBelow)
	now := time.Now()
	for _, ms := range m.Servers {
		s := &serverState{id: ms.ID, name: ms.Name, addr: ms.Addr, walDir: ms.WALDir, live: ms.Live, lastHeard: now,
			failedTP: ms.FailedTP, regions: ms.Regions, failedAt: now}
		c.servers[s.id] = s
		if s.live {
			c.byName[s.name] = s.id
			c.g.AddServer(s.id, 0)
		} else {
			c.g.AddServer(s.id, s.failedTP)
		}
	}
	for i, mr := range m.Regions {
		r := c.regions[i]
		if mr.ID != r.info.ID {
			return fmt.Errorf("metadata region %d at position %d", mr.ID, i)
		}
		r.host, r.online, r.opening, r.epoch = mr.Host, mr.Online, mr.Opening, mr.Epoch
		r.pendingWALs, r.needReplay, r.replayFrom, r.failedHosts = mr.PendingWALs, mr.NeedReplay, mr.ReplayFrom, mr.FailedHosts
		if s := c.servers[r.host]; r.host != 0 && (s == nil || !s.live) {
			// cannot happen with a consistent file; reassign it
			r.host, r.online, r.opening = 0, false, false
		}
	}
	return nil
}

// allocIDLocked returns a new client or server id, never one handed out
// before a restart; mu held.
func (c *Coordinator) allocIDLocked() uint64 {
	id := c.nextID
	c.nextID++
	if c.nextID > c.idsBelow {
		c.idsBelow = c.nextID + idBlock
		c.saveMetaLocked()
	}
	return id
}
