//go:build !unix

package object

import (
	"errors"
	"os"
)

// errNoFlock: the directory store needs flock, which this platform lacks.
var errNoFlock = errors.New("object: a directory store needs flock, which this platform lacks; use S3")

func lockFile(*os.File) error   { return errNoFlock }
func unlockFile(*os.File) error { return errNoFlock }
