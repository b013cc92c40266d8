package usage

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/logdamage"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Record is one session's usage as dsh usage -o json prints it (and as an
// API would serve it): built once here so that every caller answers with
// the same object.
type Record struct {
	ID string `json:"id"`
	// ParentID and Depth are set for the nodes below a --parent root.
	ParentID string `json:"parentId,omitempty"`
	Depth    int    `json:"depth,omitempty"`
	// Listed is false for a session a descendants listing walks through
	// without a row (an ordinary fork); nil outside a subtree.
	Listed *bool `json:"listed,omitempty"`
	// Damage and FromSeq: see logdamage.Kind; absent for a whole log.
	Damage  logdamage.Kind `json:"damage,omitempty"`
	FromSeq *int64         `json:"fromSeq,omitempty"`
	Own     TotalsRecord   `json:"own"`
	Models  []ModelRecord  `json:"models"`
	Subtree *TotalsRecord  `json:"subtree,omitempty"`
	// SubtreeModels is set with Subtree.
	SubtreeModels []ModelRecord `json:"subtreeModels,omitempty"`
}

// TotalsRecord is Totals with the wire names of DSH's usage object.
type TotalsRecord struct {
	Messages        int64 `json:"messages"`
	InputTokens     int64 `json:"inputTokens"`
	OutputTokens    int64 `json:"outputTokens"`
	CacheReadTokens int64 `json:"cacheReadTokens"`
	ReasoningTokens int64 `json:"reasoningTokens"`
}

// ModelRecord is one model's totals.
type ModelRecord struct {
	Model string `json:"model"`
	TotalsRecord
}

func totalsRecord(t Totals) TotalsRecord {
	return TotalsRecord(t)
}

func modelRecords(ms []backend.ModelUsage) []ModelRecord {
	out := make([]ModelRecord, len(ms))
	for i, m := range ms {
		out[i] = ModelRecord{Model: m.Model, TotalsRecord: totalsRecord(totalsOf(m))}
	}
	return out
}

// SessionRecord is s's record, without a subtree.
func SessionRecord(s Session) Record {
	r := Record{ID: s.ID, Damage: s.Damage, Own: totalsRecord(s.Total), Models: modelRecords(s.Models)}
	if s.FromSeq >= 0 {
		from := s.FromSeq
		r.FromSeq = &from
	}
	return r
}

// NodeRecord is n's record with its subtree's rollup.
func NodeRecord(n Node) Record {
	r := SessionRecord(n.Session)
	r.ParentID, r.Depth = n.ParentID, n.Depth
	if n.Depth > 0 {
		listed := n.Row != nil
		r.Listed = &listed
	}
	sub := totalsRecord(n.Subtree)
	r.Subtree, r.SubtreeModels = &sub, modelRecords(n.SubtreeModels)
	return r
}

// Records are the records of ids, in their order (see Read).
func Records(ctx context.Context, src backend.HeaderReader, ids []string) ([]Record, error) {
	sessions, err := Read(ctx, src, ids)
	records := make([]Record, 0, len(sessions))
	for _, s := range sessions {
		records = append(records, SessionRecord(s))
	}
	return records, err
}

// SubtreeRecords are the records of parent's subtree (see Walk), the
// parent first; childrenOnly keeps the parent and its direct children,
// whose rollups still cover everything below them.
func SubtreeRecords(ctx context.Context, rows []subagent.Row, src backend.HeaderReader, parent string, childrenOnly bool) ([]Record, error) {
	t, err := Walk(ctx, rows, src, parent)
	if err != nil {
		return nil, err
	}
	var records []Record
	for _, n := range t.Nodes {
		if childrenOnly && n.Depth > 1 {
			continue
		}
		records = append(records, NodeRecord(n))
	}
	return records, nil
}
