package boundedfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestReadRegularWithinLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	data := make([]byte, 3*chunk+17)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(context.Background(), path, int64(len(data)))
	if err != nil || string(got) != string(data) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if _, err := Read(context.Background(), path, int64(len(data)-1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v, want ErrTooLarge", err)
	}
}

// A FIFO with no writer, /dev/zero and a directory are refused at once:
// none of them would end a read.
func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	for _, path := range []string{fifo, "/dev/zero", t.TempDir()} {
		done := make(chan error, 1)
		go func() {
			_, err := Read(context.Background(), path, 1<<20)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v, want ErrNotRegular", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the read hangs", path)
		}
	}
}

func TestReadStopsWhenCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, path, 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
}
