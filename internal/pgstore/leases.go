package pgstore

import (
	"context"
	"time"
)

// serverMillis is the database server's clock in epoch milliseconds. It is
// the only clock leases are judged by: holders on different machines never
// compare their own clocks. clock_timestamp(), not now(): a transaction that
// waited for a row lock must not judge expiry at the time it began.
const serverMillis = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

// Now implements backend.Leaser: the database server's clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var ms int64
	if err := s.q().QueryRow(ctx, "SELECT "+serverMillis).Scan(&ms); err != nil {
		return time.Time{}, s.storeError(err, "read the server's clock")
	}
	return time.UnixMilli(ms), nil
}
