//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
)

// dieWithParent returns nil: only Linux can tie a child's life to its parent's.
func dieWithParent() *syscall.SysProcAttr { return nil }

// residentBytes is not implemented outside Linux.
func residentBytes(int) (uint64, error) {
	return 0, errors.New("reading the resident size: only implemented on Linux")
}
