package main

import "github.com/muster-sched/muster/internal/cli"

var newExplainCmd = cli.NewExplainCmd
