package trace

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PhillyHeader is the first line of a Philly CSV as prepared for the Pollux simulator.
const PhillyHeader = "timestamp,duration,num_gpus,gpu_time,cluster"

// TimeLayout is the layout of the Philly trace's submit times (UTC).
const TimeLayout = "2006-01-02 15:04:05"

// Job is one line of the Philly trace.
type Job struct {
	// Line is the job's line number in its file, from 1 (the header is line 1).
	Line int
	// Submit is when the job was submitted.
	Submit time.Time
	// Duration is the job's run time once it runs.
	Duration time.Duration
	// GPUs is the number of GPUs of the whole job.
	GPUs int
	// GPUTime is Duration × GPUs in GPU-seconds, as the trace states it.
	GPUTime float64
	// Cluster is the virtual cluster's hash.
	Cluster string
}

// Gang returns the shape of the job's gang on nodes of gpusPerNode GPUs: ceil(GPUs /
// gpusPerNode) workers of min(GPUs, gpusPerNode) GPUs each, or, with oneGPUWorkers, GPUs
// workers of one GPU. A job whose GPU count is not a multiple of gpusPerNode asks for a
// little more than it states (12 GPUs on 8-GPU nodes: two workers of 8), as a job with
// identical workers must.
func (j Job) Gang(gpusPerNode int, oneGPUWorkers bool) (workers, gpusPerWorker int) {
	if oneGPUWorkers || gpusPerNode <= 0 {
		return j.GPUs, 1
	}
	return (j.GPUs + gpusPerNode - 1) / gpusPerNode, min(j.GPUs, gpusPerNode)
}

// LinesError is a malformed line: file, line number and what is wrong with which field.
type LinesError struct {
	File  string
	Line  int
	Field string
	Value string
	Err   error
}

func (e *LinesError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %s %q: %v", e.File, e.Line, e.Field, e.Value, e.Err)
}

func (e *LinesError) Unwrap() error { return e.Err }

// LoadPhilly reads a Philly CSV file; errors name the file by its base name.
func LoadPhilly(path string) ([]Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open Philly trace: %w", err)
	}
	defer f.Close()
	return ReadPhilly(f, filepath.Base(path))
}

// ReadPhilly reads a Philly CSV: the header PhillyHeader, then one job a line. Empty lines
// may only end the file. name labels errors.
func ReadPhilly(r io.Reader, name string) ([]Job, error) {
	var jobs []Job
	err := readLines(r, name, PhillyHeader, func(line int, fields []string) error {
		j, err := parsePhilly(line, fields)
		if err != nil {
			return err
		}
		jobs = append(jobs, j)
		return nil
	})
	return jobs, err
}

func parsePhilly(line int, f []string) (Job, error) {
	if len(f) != 5 {
		return Job{}, fmt.Errorf("want 5 fields (%s), found %d", PhillyHeader, len(f))
	}
	j := Job{Line: line, Cluster: f[4]}
	var err error
	if j.Submit, err = time.Parse(TimeLayout, f[0]); err != nil {
		return Job{}, fieldError("timestamp", f[0], fmt.Errorf("not a time of layout %q", TimeLayout))
	}
	dur, err := nonNegative("duration", f[1])
	if err != nil {
		return Job{}, err
	}
	j.Duration = time.Duration(dur * float64(time.Second))
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return Job{}, fieldError("num_gpus", f[2], fmt.Errorf("not an integer"))
	}
	if n < 1 {
		return Job{}, fieldError("num_gpus", f[2], fmt.Errorf("want at least 1"))
	}
	j.GPUs = n
	if j.GPUTime, err = nonNegative("gpu_time", f[3]); err != nil {
		return Job{}, err
	}
	if j.Cluster == "" {
		return Job{}, fieldError("cluster", f[4], fmt.Errorf("want a virtual cluster name, found none"))
	}
	return j, nil
}

func nonNegative(field, s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fieldError(field, s, fmt.Errorf("not a finite number"))
	}
	if v < 0 {
		return 0, fieldError(field, s, fmt.Errorf("want at least 0"))
	}
	return v, nil
}

// fieldError is completed with the file and line by readLines.
func fieldError(field, value string, err error) error {
	return &LinesError{Field: field, Value: value, Err: err}
}

// readLines checks the header (if header is not "") and calls parse on every other
// non-empty line with its 1-based number and comma-separated fields. An empty line
// followed by a non-empty one is an error.
func readLines(r io.Reader, name, header string, parse func(line int, fields []string) error) error {
	sc := bufio.NewScanner(r)
	line, blank := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if line == 1 && header != "" {
			if text != header {
				return &LinesError{File: name, Line: 1, Err: fmt.Errorf("want header %q, found %q", header, text)}
			}
			continue
		}
		if text == "" {
			if blank == 0 {
				blank = line
			}
			continue
		}
		if blank != 0 {
			return &LinesError{File: name, Line: blank, Err: fmt.Errorf("empty line before line %d; want empty lines only at the end", line)}
		}
		if err := parse(line, strings.Split(text, ",")); err != nil {
			le, ok := err.(*LinesError)
			if !ok {
				le = &LinesError{Err: err}
			}
			le.File, le.Line = name, line
			return le
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s after line %d: %w", name, line, err)
	}
	if line == 0 && header != "" {
		return &LinesError{File: name, Line: 1, Err: fmt.Errorf("want header %q, found an empty file", header)}
	}
	return nil
}
