//go:build unix

package object

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f, waiting for it. A lock is held
// by the open file, so two DirBlobs of one process exclude each other too.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
