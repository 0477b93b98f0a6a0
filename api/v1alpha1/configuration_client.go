package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"
)

// Defaults of Configuration.ClientConnection. They let one muster replica bind
// several hundred pods a second: a bind is one request, and a gang's status, Events
// and records add a few more per group. client-go's own defaults (5 requests/s, burst
// 10) held a deployed muster to 5 binds/s. The API server's API Priority and Fairness
// (deploy/flowcontrol) is what protects it from a scheduler this fast.
const (
	DefaultClientQPS         float32 = 1000
	DefaultClientBurst       int32   = 2000
	DefaultClientContentType         = ContentTypeProtobuf
)

// Content types muster's clients can use for built-in types (pods, nodes, bindings,
// Events). Custom resources (PodGroups, Queues) are always sent as JSON, the only
// encoding the API server serves them in.
const (
	ContentTypeProtobuf = "application/vnd.kubernetes.protobuf"
	ContentTypeJSON     = "application/json"
)

// ClientConnection configures muster's clients of the API server. Its fields are those
// of component-base's ClientConnectionConfiguration, as kube-scheduler's is, less
// kubeconfig, which is muster serve's --kubeconfig flag.
type ClientConnection struct {
	// qps is the sustained rate of requests per second muster's clients may send, each
	// client on its own. 0 means the default, 1000.
	QPS float32 `json:"qps,omitempty"`

	// burst is how many requests may be sent at once above qps. 0 means the default,
	// 2000; it must not be less than qps.
	Burst int32 `json:"burst,omitempty"`

	// contentType is the encoding of requests for built-in types:
	// "application/vnd.kubernetes.protobuf" (the default, as kube-scheduler's) or
	// "application/json".
	ContentType string `json:"contentType,omitempty"`

	// acceptContentTypes is the Accept header of requests for built-in types, a
	// comma-separated list of those content types. Empty means contentType, then
	// JSON.
	AcceptContentTypes string `json:"acceptContentTypes,omitempty"`
}

// setDefaults fills the unset fields of c.
func (c *ClientConnection) setDefaults() {
	if c.QPS == 0 {
		c.QPS = DefaultClientQPS
	}
	if c.Burst == 0 {
		c.Burst = DefaultClientBurst
	}
	if c.ContentType == "" {
		c.ContentType = DefaultClientContentType
	}
	if c.AcceptContentTypes == "" {
		c.AcceptContentTypes = c.ContentType
		if c.ContentType != ContentTypeJSON {
			c.AcceptContentTypes += "," + ContentTypeJSON
		}
	}
}

// validate reports problems with a defaulted ClientConnection.
func (c *ClientConnection) validate(path string) []error {
	var errs []error
	if c.QPS <= 0 {
		errs = append(errs, &FieldError{path + ".qps", strconv.FormatFloat(float64(c.QPS), 'g', -1, 32), "must be > 0"})
	}
	if c.Burst <= 0 {
		errs = append(errs, &FieldError{path + ".burst", strconv.Itoa(int(c.Burst)), "must be > 0"})
	} else if c.QPS > 0 && float32(c.Burst) < c.QPS {
		errs = append(errs, &FieldError{path + ".burst", strconv.Itoa(int(c.Burst)),
			fmt.Sprintf("must be >= qps (%g)", c.QPS)})
	}
	if !knownContentType(c.ContentType) {
		errs = append(errs, &FieldError{path + ".contentType", fmt.Sprintf("%q", c.ContentType),
			fmt.Sprintf("expected %q or %q", ContentTypeProtobuf, ContentTypeJSON)})
	}
	for _, t := range strings.Split(c.AcceptContentTypes, ",") {
		if !knownContentType(strings.TrimSpace(t)) {
			errs = append(errs, &FieldError{path + ".acceptContentTypes", fmt.Sprintf("%q", c.AcceptContentTypes),
				fmt.Sprintf("expected a comma-separated list of %q and %q", ContentTypeProtobuf, ContentTypeJSON)})
			break
		}
	}
	return errs
}

// knownContentType reports whether t is a content type muster's clients can use.
func knownContentType(t string) bool {
	return t == ContentTypeProtobuf || t == ContentTypeJSON
}
