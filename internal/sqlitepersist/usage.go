package sqlitepersist

import "github.com/dsh-project/dsh/internal/backend"

// UsageOf is sqlstore.Core's: every SQLite file dsh reads has migration
// 0012 (a read-only open refuses an older schema).
var _ backend.UsageReader = (*Store)(nil)
