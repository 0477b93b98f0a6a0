package v1alpha1

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// durationFields are the paths of the Configuration's duration fields. They are
// checked before decoding because metav1.Duration's own parse error does not name the
// field it came from.
var durationFields = [][]string{
	{"groupDefaults", "startTimeout"},
	{"groupDefaults", "recoveryTimeout"},
	{"groupDefaults", "backoffBase"},
	{"groupDefaults", "backoffMax"},
	{"starvationThreshold"},
	{"reconcilePeriod"},
	{"leaderElection", "leaseDuration"},
	{"leaderElection", "renewDeadline"},
	{"leaderElection", "retryPeriod"},
}

// LoadConfiguration reads the YAML configuration file at path, decodes it strictly,
// fills in defaults and validates it. A nil error means the returned Configuration is
// complete and valid.
func LoadConfiguration(path string) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading configuration file: %w", err)
	}
	c, err := ParseConfiguration(data)
	if err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", path, err)
	}
	return c, nil
}

// ParseConfiguration decodes a YAML (or JSON) configuration document, fills in defaults
// and validates it, as LoadConfiguration does for a file. apiVersion must be
// muster.dev/v1alpha1 and kind Configuration; unknown and duplicate fields are errors.
func ParseConfiguration(data []byte) (*Configuration, error) {
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	if err := checkTypeMeta(jsonData); err != nil {
		return nil, err
	}
	if err := checkDurations(jsonData); err != nil {
		return nil, err
	}
	c := &Configuration{}
	strictErrs, err := kjson.UnmarshalStrict(jsonData, c)
	if err != nil {
		return nil, fmt.Errorf("decoding configuration: %w", err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("decoding configuration: %w", errors.Join(strictErrs...))
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkTypeMeta checks apiVersion and kind before the rest of the document is decoded,
// so that a file of another kind is reported as such rather than as unknown fields.
func checkTypeMeta(jsonData []byte) error {
	var doc map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(jsonData, &doc); err != nil {
		return fmt.Errorf("expected a YAML mapping of apiVersion, kind and settings: %w", err)
	}
	if doc == nil {
		return fmt.Errorf("apiVersion: missing, expected %q (empty document)", GroupVersion.String())
	}
	var errs []error
	for _, f := range []struct{ name, want string }{
		{"apiVersion", GroupVersion.String()},
		{"kind", ConfigurationKind},
	} {
		v, present := doc[f.name]
		s, isString := v.(string)
		switch {
		case !present || v == nil || (isString && s == ""):
			errs = append(errs, fmt.Errorf("%s: missing, expected %q", f.name, f.want))
		case !isString || s != f.want:
			errs = append(errs, fmt.Errorf("%s: %s: expected %q", f.name, renderValue(v), f.want))
		}
	}
	return errors.Join(errs...)
}

// checkDurations reports every duration field whose value is not a Go duration
// string, naming the field and the value.
func checkDurations(jsonData []byte) error {
	var doc map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(jsonData, &doc); err != nil {
		return fmt.Errorf("decoding configuration: %w", err)
	}
	var errs []error
	for _, path := range durationFields {
		v, ok := lookup(doc, path)
		if !ok || v == nil {
			continue
		}
		s, isString := v.(string)
		if !isString {
			errs = append(errs, &FieldError{Path: joinPath(path), Value: renderValue(v),
				Reason: `expected a duration string such as "30s" or "5m"`})
			continue
		}
		if _, err := time.ParseDuration(s); err != nil {
			errs = append(errs, &FieldError{Path: joinPath(path), Value: renderValue(v),
				Reason: `expected a duration such as "30s" or "5m"`})
		}
	}
	return errors.Join(errs...)
}

// lookup walks nested JSON objects along path.
func lookup(doc map[string]any, path []string) (any, bool) {
	var cur any = doc
	for _, key := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[key]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// joinPath renders a field path as dotted JSON names.
func joinPath(path []string) string {
	return strings.Join(path, ".")
}

// renderValue renders a decoded JSON value for an error message: strings quoted,
// everything else as Go prints it.
func renderValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}
