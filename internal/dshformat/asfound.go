package dshformat

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
)

var _ backend.AsFoundReader = (*Corpus)(nil)

// LogAsFound implements backend.AsFoundReader: session id's log as an
// import stores it (Source.ReadAsFound), so that dsh usage in place and
// over the same corpus imported sum the same events.
func (c *Corpus) LogAsFound(ctx context.Context, id string) (*backend.AsFoundLog, error) {
	if _, err := c.Header(ctx, id); err != nil {
		return nil, err
	}
	s, err := c.src.ReadAsFound(ctx, id)
	if err != nil {
		return nil, err
	}
	l := &backend.AsFoundLog{Header: s.Header, Events: s.Events, TornFrom: -1, DamagedFrom: -1}
	switch {
	case s.Damage != nil:
		l.DamagedFrom = s.Damage.Seq()
	case s.Torn != nil:
		l.TornFrom = s.Torn.FromSeq
	}
	return l, nil
}
