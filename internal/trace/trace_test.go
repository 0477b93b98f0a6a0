package trace

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"
)

const phillyOK = PhillyHeader + `
2017-10-09 07:01:55,66.0,1,66.0,11cb48
2017-10-09 06:13:03,2951.5,16,47224.0,6214e9

`

func TestReadPhilly(t *testing.T) {
	jobs, err := ReadPhilly(strings.NewReader(phillyOK), "philly.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		{Line: 2, Submit: time.Date(2017, 10, 9, 7, 1, 55, 0, time.UTC), Duration: 66 * time.Second, GPUs: 1, GPUTime: 66, Cluster: "11cb48"},
		{Line: 3, Submit: time.Date(2017, 10, 9, 6, 13, 3, 0, time.UTC), Duration: 2951500 * time.Millisecond, GPUs: 16, GPUTime: 47224, Cluster: "6214e9"},
	}
	if len(jobs) != len(want) {
		t.Fatalf("got %d jobs, want %d", len(jobs), len(want))
	}
	for i := range want {
		if jobs[i] != want[i] {
			t.Errorf("job %d = %+v, want %+v", i, jobs[i], want[i])
		}
	}
}

func TestReadPhillyMalformed(t *testing.T) {
	good := "2017-10-09 07:01:55,66.0,1,66.0,11cb48"
	for _, tc := range []struct {
		name, input, want string
	}{
		{"empty file", "", `philly.csv:1: want header "timestamp,duration,num_gpus,gpu_time,cluster", found an empty file`},
		{"wrong header", "time,duration\n", `philly.csv:1: want header "timestamp,duration,num_gpus,gpu_time,cluster", found "time,duration"`},
		{"too few fields", PhillyHeader + "\n" + good + "\n2017-10-09 07:01:55,66.0,1\n", "philly.csv:3: want 5 fields (timestamp,duration,num_gpus,gpu_time,cluster), found 3"},
		{"too many fields", PhillyHeader + "\n" + good + ",x\n", "philly.csv:2: want 5 fields (timestamp,duration,num_gpus,gpu_time,cluster), found 6"},
		{"bad timestamp", PhillyHeader + "\n2017-13-09 07:01:55,66.0,1,66.0,c\n", `philly.csv:2: timestamp "2017-13-09 07:01:55": not a time of layout "2006-01-02 15:04:05"`},
		{"bad duration", PhillyHeader + "\n2017-10-09 07:01:55,abc,1,66.0,c\n", `philly.csv:2: duration "abc": not a finite number`},
		{"infinite duration", PhillyHeader + "\n2017-10-09 07:01:55,Inf,1,66.0,c\n", `philly.csv:2: duration "Inf": not a finite number`},
		{"negative duration", PhillyHeader + "\n2017-10-09 07:01:55,-1,1,66.0,c\n", `philly.csv:2: duration "-1": want at least 0`},
		{"bad num_gpus", PhillyHeader + "\n" + strings.Repeat(good+"\n", 15) + "2017-10-09 07:01:55,66.0,x,66.0,c\n", `philly.csv:17: num_gpus "x": not an integer`},
		{"fractional num_gpus", PhillyHeader + "\n2017-10-09 07:01:55,66.0,1.5,66.0,c\n", `philly.csv:2: num_gpus "1.5": not an integer`},
		{"zero num_gpus", PhillyHeader + "\n2017-10-09 07:01:55,66.0,0,0,c\n", `philly.csv:2: num_gpus "0": want at least 1`},
		{"bad gpu_time", PhillyHeader + "\n2017-10-09 07:01:55,66.0,1,NaN,c\n", `philly.csv:2: gpu_time "NaN": not a finite number`},
		{"negative gpu_time", PhillyHeader + "\n2017-10-09 07:01:55,66.0,1,-66,c\n", `philly.csv:2: gpu_time "-66": want at least 0`},
		{"empty cluster", PhillyHeader + "\n2017-10-09 07:01:55,66.0,1,66.0,\n", `philly.csv:2: cluster "": want a virtual cluster name, found none`},
		{"empty line inside", PhillyHeader + "\n" + good + "\n\n" + good + "\n", "philly.csv:3: empty line before line 4; want empty lines only at the end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadPhilly(strings.NewReader(tc.input), "philly.csv")
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error %q, want %q", err, tc.want)
			}
			var le *LinesError
			if !errors.As(err, &le) {
				t.Errorf("error %T is not a *LinesError", err)
			}
		})
	}
}

func TestGang(t *testing.T) {
	for _, tc := range []struct {
		gpus, perNode int
		one           bool
		workers, each int
	}{
		{1, 8, false, 1, 1},
		{4, 8, false, 1, 4},
		{8, 8, false, 1, 8},
		{12, 8, false, 2, 8},
		{16, 8, false, 2, 8},
		{128, 8, false, 16, 8},
		{16, 8, true, 16, 1},
	} {
		w, e := Job{GPUs: tc.gpus}.Gang(tc.perNode, tc.one)
		if w != tc.workers || e != tc.each {
			t.Errorf("%d GPUs on %d-GPU nodes (one-GPU workers %v): %d × %d, want %d × %d", tc.gpus, tc.perNode, tc.one, w, e, tc.workers, tc.each)
		}
	}
}

func TestReadMachines(t *testing.T) {
	ms, err := ReadMachines(strings.NewReader("m1,V100,96,512,8\nm2,CPU,96,512,0\n"), "pai.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []Machine{{Line: 1, Name: "m1", GPUType: "V100", CPU: 96, MemoryGiB: 512, GPUs: 8}, {Line: 2, Name: "m2", GPUType: "CPU", CPU: 96, MemoryGiB: 512}}
	if len(ms) != 2 || ms[0] != want[0] || ms[1] != want[1] {
		t.Errorf("got %+v, want %+v", ms, want)
	}
	for _, tc := range []struct{ input, want string }{
		{"m1,V100,96,512\n", "pai.csv:1: want 5 fields (machine,gpu_type,cap_cpu,cap_mem,cap_gpu), found 4"},
		{",V100,96,512,8\n", `pai.csv:1: machine "": want a machine name, found none`},
		{"m1,,96,512,8\n", `pai.csv:1: gpu_type "": want a GPU type or CPU, found none`},
		{"m1,V100,x,512,8\n", `pai.csv:1: cap_cpu "x": not an integer`},
		{"m1,V100,96,5.5,8\n", `pai.csv:1: cap_mem "5.5": not an integer`},
		{"m1,V100,96,512,8\nm2,V100,96,512,-1\n", `pai.csv:2: cap_gpu "-1": want at least 0`},
	} {
		if _, err := ReadMachines(strings.NewReader(tc.input), "pai.csv"); err == nil || err.Error() != tc.want {
			t.Errorf("ReadMachines(%q) error %v, want %q", tc.input, err, tc.want)
		}
	}
}

// TestEmbeddedTraces reads the shipped copies and checks them against the counts their
// owners' README publishes, and that each compressed file stays small enough to commit.
func TestEmbeddedTraces(t *testing.T) {
	jobs, err := Philly()
	if err != nil {
		t.Fatal(err)
	}
	byGPUs := map[int]int{}
	for _, j := range jobs {
		byGPUs[j.GPUs]++
	}
	if len(jobs) != 82247 || byGPUs[1] != 76627 || byGPUs[128] != 3 || byGPUs[16] != 199 {
		t.Errorf("philly.csv: %d jobs, %d of 1 GPU, %d of 16, %d of 128; want 82247, 76627, 199, 3", len(jobs), byGPUs[1], byGPUs[16], byGPUs[128])
	}
	ms, err := PAIMachines()
	if err != nil {
		t.Fatal(err)
	}
	// The README's per-type counts (83+280+798+497+104+135) sum to 1,897; its total says 1,896.
	if len(ms) != 1897 {
		t.Errorf("pai-machine-spec.csv: %d machines, want 1897", len(ms))
	}
	for _, name := range []string{PhillyFile, PAIMachinesFile} {
		fi, err := fs.Stat(embedded, "data/"+name+".gz")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s.gz: %d bytes", name, fi.Size())
		if fi.Size() >= 2<<20 {
			t.Errorf("%s.gz is %d bytes, want < 2 MiB (the repository refuses larger files)", name, fi.Size())
		}
	}
	if _, err := OpenEmbedded("helios.csv"); err == nil || !strings.Contains(err.Error(), `embedded trace "helios.csv"`) {
		t.Errorf("OpenEmbedded of an unknown trace: error %v, want one naming it", err)
	}
}
