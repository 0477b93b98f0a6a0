// Package trace reads public cluster traces: the Philly job trace (jobs with a submit
// time, a run time and a GPU count) and Alibaba PAI's machine list. Readers validate every
// line and report a malformed one by file name, line number and field, the way a compiler
// reports a syntax error, so a bad trace fails loudly instead of skewing a simulation.
package trace
