// Package upstreamtest checks the sandbox's simulated cluster against the upstream
// kube-scheduler of the same Kubernetes version: what the sandbox publishes (its DRA
// driver's ResourceSlices and DeviceClass) is what kube-scheduler's plugins consume,
// and what kube-scheduler writes (a claim's allocation and reservation, the pod's
// binding) is what the simulated kubelet accepts. It holds tests only.
package upstreamtest
