package controller

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// maxNote is the longest Event note the events API accepts.
const maxNote = 1024

// groupEvent records an Event on a group's object, or on its member pods when it
// has none (Labels and Single groups).
func (s *scheduler) groupEvent(gk, typ, reason, message string) {
	if obj := s.objects[gk]; obj != nil {
		s.event(obj, typ, reason, message)
		return
	}
	for _, p := range s.ours(s.memberList(gk)) {
		s.event(p, typ, reason, message)
	}
}

// podEvent records an Event on a pod, if it is known.
func (s *scheduler) podEvent(key, typ, reason, message string) {
	if p := s.pods[key]; p != nil {
		s.event(p, typ, reason, message)
	}
}

func (s *scheduler) event(obj runtime.Object, typ, reason, message string) {
	if len(message) > maxNote {
		message = message[:maxNote-3] + "..."
	}
	s.recorder.Eventf(obj, nil, typ, reason, "Scheduling", "%s", message)
}
