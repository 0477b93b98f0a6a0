package queue

import (
	"reflect"
	"testing"
)

// TestSameFieldsNamesEveryField changes each of Reason's fields in turn, but the
// diagnosis and subject that sameReason compares apart, and wants sameFields to see
// the change: a field added to Reason and not to sameFields fails here.
func TestSameFieldsNamesEveryField(t *testing.T) {
	typ := reflect.TypeFor[Reason]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "Diagnosis" || f.Name == "subject" {
			continue
		}
		var b Reason
		v := reflect.ValueOf(&b).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Int64:
			v.SetInt(1)
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Slice:
			v.Set(reflect.Append(v, reflect.ValueOf("x")))
		default:
			t.Fatalf("Reason.%s is a %s: teach this test and sameFields to compare it", f.Name, v.Kind())
		}
		if sameFields(Reason{}, b) {
			t.Errorf("sameFields does not compare Reason.%s", f.Name)
		}
	}
	if !sameFields(Reason{Kind: Placement, Candidates: []string{"a"}}, Reason{Kind: Placement, Candidates: []string{"a"}}) {
		t.Error("sameFields(a, a) = false")
	}
}
