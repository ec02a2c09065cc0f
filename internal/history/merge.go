package history

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
)

// Source is one history to merge: its file and what to add to its times
// to put them on the merged history's clock (a worker host's clock offset
// against the coordinator, in ns; 0 for client processes of one host).
type Source struct {
	Path     string
	OffsetNs int64
}

// MergeResult says how the sources were joined.
type MergeResult struct {
	// Ops is the number of operations written.
	Ops int
	// ProcessBase[i] is what was added to source i's process ids: source i
	// holds processes ProcessBase[i] .. ProcessBase[i+1]-1 of the merged
	// history.
	ProcessBase []int
	// Torn lists the sources whose last line was torn (and skipped).
	Torn []string
}

type mergeEntry struct {
	op  Op
	src int
	seq int
}

// Merge writes the operations of every source into w as one history: the
// times of source i shifted by its OffsetNs, its process ids by the sum of
// the process counts (highest id + 1) of the sources before it, so they
// stay distinct, and every operation in order of completion (then invoke,
// source, line): the same order a single writer would have produced. It is
// exact: no operation is dropped or changed but for those shifts. The
// sources are read whole (a history of a million operations takes a few
// hundred MB).
func Merge(ctx context.Context, w io.Writer, sources []Source) (MergeResult, error) {
	var res MergeResult
	var all []mergeEntry
	base := 0
	for i, s := range sources {
		res.ProcessBase = append(res.ProcessBase, base)
		maxP := -1
		seq := 0
		torn, err := Each(ctx, s.Path, func(op *Op) error {
			e := mergeEntry{op: *op, src: i, seq: seq}
			seq++
			e.op.Mops = slices.Clone(op.Mops)
			for j := range e.op.Mops {
				if m := &e.op.Mops[j]; m.IsList {
					m.List = slices.Clone(m.List)
				} else {
					m.List = nil
				}
			}
			maxP = max(maxP, e.op.Process)
			e.op.Process += base
			e.op.Invoke += s.OffsetNs
			e.op.Complete += s.OffsetNs
			all = append(all, e)
			return nil
		})
		if err != nil {
			return res, fmt.Errorf("merging histories: %w", err)
		}
		if torn {
			res.Torn = append(res.Torn, s.Path)
		}
		base += maxP + 1
	}
	slices.SortFunc(all, func(a, b mergeEntry) int {
		return cmp.Or(cmp.Compare(a.op.Complete, b.op.Complete), cmp.Compare(a.op.Invoke, b.op.Invoke),
			cmp.Compare(a.src, b.src), cmp.Compare(a.seq, b.seq))
	})
	hw, err := NewWriter(w)
	if err != nil {
		return res, err
	}
	for i := range all {
		if err := hw.Write(&all[i].op); err != nil {
			return res, err
		}
	}
	res.Ops = len(all)
	return res, hw.Flush()
}
