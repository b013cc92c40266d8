package dshformat

import (
	"testing"

	"github.com/dsh-project/dsh/internal/dshfixtures"
)

// TestMain reports, in one line, the DSH-conformance tests skipped when
// ../shared/fixtures is absent.
func TestMain(m *testing.M) { dshfixtures.Main(m) }
