package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// child is a process the sandbox started (a `muster serve`, a sandbox of its own), and
// how it exited.
type child struct {
	// what names it in errors, e.g. "muster".
	what string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// startChild starts cmd, killed if this process dies, and waits for it in the
// background.
func startChild(what string, cmd *exec.Cmd) (*child, error) {
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", what, cmd.Path, err)
	}
	c := &child{what: what, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// PID returns the process id.
func (c *child) PID() int { return c.cmd.Process.Pid }

// Done is closed when the process has exited.
func (c *child) Done() <-chan struct{} { return c.done }

// Err returns how the process exited (nil for status 0); call it after Done.
func (c *child) Err() error { return c.err }

// Signal sends sig to the process; one that has exited is not an error.
func (c *child) Signal(sig os.Signal) error {
	if err := c.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling %s (pid %d) with %v: %w", c.what, c.PID(), sig, err)
	}
	return nil
}

// Kill kills the process with SIGKILL, as the OOM killer or a lost node would, and
// waits until it is gone.
func (c *child) Kill() error {
	if err := c.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-c.done
	return nil
}

// Stop sends SIGTERM, as the kubelet does, and waits up to timeout for the process
// to exit; it returns the process's exit error, or an error if it did not exit (it
// is then killed).
func (c *child) Stop(timeout time.Duration) error {
	if err := c.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-c.done:
		if c.err != nil && !diedOf(c.err, syscall.SIGTERM) {
			return fmt.Errorf("%s (pid %d) exited after SIGTERM: %w", c.what, c.PID(), c.err)
		}
		return nil
	case <-time.After(timeout):
		_ = c.Kill()
		return fmt.Errorf("%s (pid %d): expected it to exit within %s of SIGTERM, found it running (killed)", c.what, c.PID(), timeout)
	}
}

// diedOf reports whether a process's exit error says it was ended by sig: a muster
// signalled before it installed its handler (within its first moments) dies of
// SIGTERM, having had nothing to hand over.
func diedOf(err error, sig syscall.Signal) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}
