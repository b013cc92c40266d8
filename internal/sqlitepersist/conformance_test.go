package sqlitepersist_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/storetest"
)

// TestConformance runs the backend contract's suite against SQLite files.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Target{
		New: func(ctx context.Context) (string, func(), error) {
			dir, err := os.MkdirTemp("", "dsh-storetest-")
			if err != nil {
				return "", nil, err
			}
			return filepath.Join(dir, "dsh.db"), func() { os.RemoveAll(dir) }, nil
		},
		Open: func(ctx context.Context, addr string, readOnly bool) (backend.Backend, error) {
			if readOnly {
				return sqlitepersist.OpenReadOnly(ctx, addr, sqlitepersist.Options{})
			}
			return sqlitepersist.Open(ctx, addr, sqlitepersist.Options{})
		},
		Fingerprint: func(addr string) (string, error) {
			ents, err := os.ReadDir(filepath.Dir(addr))
			if err != nil {
				return "", err
			}
			var lines []string
			for _, e := range ents {
				fi, err := e.Info()
				if err != nil {
					return "", err
				}
				line := fmt.Sprintf("%s %d %s", e.Name(), fi.Size(), fi.ModTime())
				if strings.HasSuffix(e.Name(), "-shm") {
					// SQLite maps the WAL index even to read; its mtime
					// moving is issue #11's defect 12, fixed with the
					// read-only open, not here.
					line = fmt.Sprintf("%s %d", e.Name(), fi.Size())
				}
				lines = append(lines, line)
			}
			sort.Strings(lines)
			return strings.Join(lines, "\n"), nil
		},
	})
}
