package render

import (
	"strconv"
	"time"

	"github.com/dsh-project/dsh/internal/leases"
)

// Leases prints leases: JSON and JSONL the rows as they are (epoch
// milliseconds), table and TSV one line per lease for people with times in
// UTC: SESSION, HOLDER, HOST, PID, ACQUIRED, EXPIRES, STATE.
func (p *Printer) Leases(rows []leases.Row) error {
	l := NewList(p, leaseColumns)
	for _, r := range rows {
		if err := l.Add(r); err != nil {
			return err
		}
	}
	return l.Close()
}

var leaseColumns = []Column[leases.Row]{
	{Header: "SESSION", Value: func(r leases.Row) string { return r.SessionID }},
	{Header: "HOLDER", Value: func(r leases.Row) string { return r.Holder }},
	{Header: "HOST", Value: func(r leases.Row) string { return r.Host }},
	{Header: "PID", Value: func(r leases.Row) string { return strconv.Itoa(r.PID) }},
	{Header: "ACQUIRED", Value: func(r leases.Row) string { return Millis(r.AcquiredAt) }},
	{Header: "EXPIRES", Value: func(r leases.Row) string { return Millis(r.ExpiresAt) }},
	{Header: "STATE", Value: func(r leases.Row) string { return string(r.State) }},
}

// Millis renders an epoch-millisecond time for people, in UTC with
// milliseconds.
func Millis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
