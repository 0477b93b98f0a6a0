//go:build !unix

package main

import "time"

// processCPU is not measured where getrusage is missing: the sim reports zero.
func processCPU() time.Duration { return 0 }
