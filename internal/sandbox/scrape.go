package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// scrapeTimeout bounds one read of a metrics endpoint.
const scrapeTimeout = 5 * time.Second

// ScrapeMetric reads the Prometheus text exposition at http://addr/metrics and
// returns the value of the first sample of the named metric (any labels); ok is false
// if the endpoint serves no such sample.
func ScrapeMetric(ctx context.Context, addr, name string) (value float64, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, false, fmt.Errorf("scraping %s: %w", addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, fmt.Errorf("scraping %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("scraping %s: expected status 200, found %s", addr, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, found := strings.CutPrefix(line, name)
		if !found || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		fields := strings.Fields(line[strings.LastIndex(line, "}")+1:])
		if rest[0] == ' ' {
			fields = strings.Fields(rest)
		}
		if len(fields) == 0 {
			return 0, false, fmt.Errorf("scraping %s: sample line %q has no value", addr, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, false, fmt.Errorf("scraping %s: sample line %q: %w", addr, line, err)
		}
		return v, true, nil
	}
	return 0, false, sc.Err()
}
