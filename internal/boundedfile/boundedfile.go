// Package boundedfile reads a small file a user names (a config file, a
// golden listing, DSH's projection cache) so that no name can hang dsh or
// exhaust its memory: only a regular file is read (a FIFO would block, and
// /dev/zero never ends), at most a stated number of bytes, and the read
// stops when its context is cancelled.
package boundedfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular: the path names a FIFO, a device, a directory or a socket.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge: the file holds more bytes than the caller's limit.
var ErrTooLarge = errors.New("file too large")

// chunk is how much is read between two checks of the context.
const chunk = 1 << 20

// Read returns the content of the regular file at path, refusing one larger
// than limit bytes. The file is opened without blocking and checked once
// open, so a FIFO swapped in after a look at the name is refused too.
func Read(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, info, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, tooLarge(path, limit)
	}
	buf := make([]byte, 0, info.Size())
	r := io.LimitReader(f, limit+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := io.CopyN(writer{&buf}, r, chunk)
		if int64(len(buf)) > limit {
			return nil, tooLarge(path, limit) // it grew while being read
		}
		if errors.Is(err, io.EOF) || (err == nil && n < chunk) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Open opens the regular file at path for reading without ever blocking:
// a name that is not a regular file is refused before it is opened, and
// the opened file is checked again (O_NONBLOCK: opening a FIFO swapped in
// meanwhile returns at once), so that only a regular file is returned,
// with its metadata.
func Open(path string) (*os.File, os.FileInfo, error) {
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() {
		return nil, nil, NotRegular(path, info.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, NotRegular(path, info.Mode())
	}
	return f, info, nil
}

// NotRegular is the ErrNotRegular refusal of path, naming what it is
// ("" leaves the path to the caller's message).
func NotRegular(path string, mode os.FileMode) error {
	if path == "" {
		return fmt.Errorf("%w (%s)", ErrNotRegular, Kind(mode))
	}
	return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, Kind(mode))
}

func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%s: %w (dsh reads at most %d bytes)", path, ErrTooLarge, limit)
}

type writer struct{ b *[]byte }

func (w writer) Write(p []byte) (int, error) {
	*w.b = append(*w.b, p...)
	return len(p), nil
}

// Kind names what a file that is not a regular file is, in words ("a
// FIFO", "a directory", …), for messages that refuse it.
func Kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}
