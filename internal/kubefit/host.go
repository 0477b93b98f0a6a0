package kubefit

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	schedv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"sigs.k8s.io/yaml"

	"github.com/muster-sched/muster/internal/cluster"
)

// Plugins are the kube-scheduler Filter plugins muster hosts, in the default profile's
// order: a node's verdict is the first of them that rejects it, as in kube-scheduler.
var Plugins = []string{
	names.NodeUnschedulable,
	names.NodeName,
	names.TaintToleration,
	names.NodeAffinity,
	names.NodePorts,
	names.NodeResourcesFit,
	names.VolumeRestrictions,
	names.NodeVolumeLimits,
	names.VolumeBinding,
	names.VolumeZone,
	names.PodTopologySpread,
	names.InterPodAffinity,
	names.DynamicResources,
}

// required are the plugins a framework cannot be built without; muster never calls them
// (it orders its queue and writes its bindings itself).
var required = []string{names.PrioritySort, names.DefaultBinder}

// Options configure the hosted plugins.
type Options struct {
	// PluginConfig sets plugin arguments as a kube-scheduler profile's pluginConfig does
	// (kubescheduler.config.k8s.io/v1); plugins it does not name keep the default
	// profile's arguments.
	PluginConfig []schedv1.PluginConfig
}

// Host runs kube-scheduler's own PreFilter and Filter plugins, through its framework
// runtime, over muster snapshots. The plugins read a snapshot through listers over it
// (NodeInfos built from its pods, informers filled from its Objects); nothing reaches a
// client. A Host serves one caller at a time (Run locks it).
type Host struct {
	mu        sync.Mutex
	fw        framework.Framework
	lister    *switchLister
	current   *view
	informers map[reflect.Type]*memInformer
	// objects and generation are the Objects last loaded into the informers.
	objects    *cluster.Objects
	generation uint64
	// volumes is the VolumeBinding plugin of fw.
	volumes *volumebinding.VolumeBinding
	// devices is the DynamicResources plugin of fw, and dra its DRA manager (claims with
	// their allocations in flight, slices, classes).
	devices *dynamicresources.DynamicResources
	dra     *dynamicresources.DefaultDRAManager
	// claims versions the ResourceClaims loaded into the informers.
	claims claimVersions
	// always is set when the configured arguments add rules to every pod (NodeAffinity's
	// addedAffinity, hard default spread constraints): every member is then judged here.
	always bool
}

// Always reports whether every pod must be judged by the hosted plugins, because their
// arguments add rules to pods that ask for nothing themselves.
func (h *Host) Always() bool { return h.always }

// switchLister is the SharedLister the framework is built with; it points at the view of
// the snapshot being placed on (or, for Upstream, kube-scheduler's own snapshot).
type switchLister struct{ fwk.SharedLister }

// watched are the object kinds the plugins' informers are filled with.
var watched = []runtime.Object{
	&corev1.Namespace{}, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{},
	&storagev1.StorageClass{}, &storagev1.CSINode{}, &storagev1.CSIDriver{},
	&resourcev1.ResourceClaim{}, &resourcev1.ResourceSlice{}, &resourcev1.DeviceClass{},
	&resourcev1.DeviceTaintRule{},
	// Read by the plugins, never filled: muster has no volume attachments or storage
	// capacities to show them, and topology spread's system defaults are soft.
	&storagev1.VolumeAttachment{}, &storagev1.CSIStorageCapacity{}, &corev1.Service{},
	&corev1.Pod{}, &corev1.Node{},
}

var claimType = reflect.TypeOf(&resourcev1.ResourceClaim{})

// New builds a Host with kube-scheduler v1.37's default plugin arguments, overridden by
// opts.PluginConfig.
func New(opts Options) (*Host, error) {
	// The framework counts into kube-scheduler's metric vectors, which must exist; muster
	// does not register them, so they stay no-ops.
	initMetrics.Do(schedmetrics.InitMetrics)
	profile, err := profileWith(opts.PluginConfig)
	if err != nil {
		return nil, err
	}
	always, err := checkArgs(profile.PluginConfig)
	if err != nil {
		return nil, err
	}
	h := &Host{lister: &switchLister{}, informers: map[reflect.Type]*memInformer{}, always: always}
	factory := informers.NewSharedInformerFactory(nil, 0)
	for _, obj := range watched {
		m := newMemInformer()
		h.informers[reflect.TypeOf(obj)] = m
		factory.InformerFor(obj, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return m })
	}
	registry := frameworkruntime.Registry{}
	for name, factory := range plugins.NewInTreeRegistry() {
		if slices.Contains(Plugins, name) || slices.Contains(required, name) {
			registry[name] = factory
		}
	}
	// Keep the VolumeBinding plugin built, whose binder tells which claims a pod needs
	// provisioned on its node (Cycle.Provisions).
	newVolumeBinding := registry[names.VolumeBinding]
	registry[names.VolumeBinding] = func(ctx context.Context, args runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
		p, err := newVolumeBinding(ctx, args, fh)
		if vb, ok := p.(*volumebinding.VolumeBinding); ok {
			h.volumes = vb
		}
		return p, err
	}
	newDynamicResources := registry[names.DynamicResources]
	registry[names.DynamicResources] = func(ctx context.Context, args runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
		p, err := newDynamicResources(ctx, args, fh)
		if dr, ok := p.(*dynamicresources.DynamicResources); ok {
			h.devices = dr
		}
		return p, err
	}
	ctx := klog.NewContext(context.Background(), klog.Background().V(10))
	if h.dra, err = h.newDRAManager(ctx, factory); err != nil {
		return nil, err
	}
	if err := h.registerExtendedResources(); err != nil {
		return nil, err
	}
	h.fw, err = frameworkruntime.NewFramework(ctx, registry, profile,
		frameworkruntime.WithSharedDRAManager(h.dra),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSnapshotSharedLister(h.lister),
		frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(factory.Storage().V1().CSINodes().Lister())),
		frameworkruntime.WithParallelism(1),
	)
	if err != nil {
		return nil, fmt.Errorf("building kube-scheduler's filter plugins: %w", err)
	}
	return h, nil
}

var initMetrics sync.Once

// checkArgs refuses the plugin arguments muster cannot honour, and reports whether the
// arguments add rules to every pod. NodeResourcesFit's ignored resources are refused:
// muster counts resources itself (it packs nodes by them), and would count what the
// plugin ignores.
func checkArgs(pcs []config.PluginConfig) (always bool, err error) {
	for _, pc := range pcs {
		switch args := pc.Args.(type) {
		case *config.NodeResourcesFitArgs:
			if len(args.IgnoredResources)+len(args.IgnoredResourceGroups) > 0 {
				return false, fmt.Errorf("%s: ignoredResources %v, ignoredResourceGroups %v: not supported by muster, which counts every requested resource",
					pc.Name, args.IgnoredResources, args.IgnoredResourceGroups)
			}
		case *config.NodeAffinityArgs:
			always = always || args.AddedAffinity != nil
		case *config.PodTopologySpreadArgs:
			for _, c := range args.DefaultConstraints {
				always = always || (args.DefaultingType == config.ListDefaulting && c.WhenUnsatisfiable == corev1.DoNotSchedule)
			}
		}
	}
	return always, nil
}

// profileWith is the default profile with only the hosted plugins enabled, and the
// default profile's plugin arguments with pluginConfig's on top. The arguments are
// decoded, defaulted and validated as kube-scheduler decodes its --config file.
func profileWith(pluginConfig []schedv1.PluginConfig) (*config.KubeSchedulerProfile, error) {
	doc := map[string]any{
		"apiVersion": schedv1.SchemeGroupVersion.String(),
		"kind":       "KubeSchedulerConfiguration",
		"profiles":   []any{map[string]any{"schedulerName": "muster", "pluginConfig": pluginConfig}},
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("pluginConfig: %w", err)
	}
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("pluginConfig: %w", err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok || len(cfg.Profiles) != 1 {
		return nil, fmt.Errorf("pluginConfig: decoded %T, not one profile", obj)
	}
	p := cfg.Profiles[0]
	enabled := make([]config.Plugin, len(Plugins))
	for i, name := range Plugins {
		enabled[i] = config.Plugin{Name: name}
	}
	p.Plugins = &config.Plugins{
		QueueSort: config.PluginSet{Enabled: []config.Plugin{{Name: names.PrioritySort}}},
		PreFilter: config.PluginSet{Enabled: enabled},
		Filter:    config.PluginSet{Enabled: enabled},
		Bind:      config.PluginSet{Enabled: []config.Plugin{{Name: names.DefaultBinder}}},
	}
	return &p, nil
}

// load points the plugins at snap: its view for the node lister, its Objects in the
// informers when they changed since the last load.
func (h *Host) load(snap *cluster.Snapshot) error {
	h.current = viewOf(snap)
	h.lister.SharedLister = h.current
	objs := snap.Objects()
	if objs == h.objects && objs.Generation() == h.generation {
		return nil
	}
	fill := map[reflect.Type][]runtime.Object{
		reflect.TypeOf(&corev1.Namespace{}):             values(objs.Namespaces),
		reflect.TypeOf(&corev1.PersistentVolumeClaim{}): values(objs.Claims),
		reflect.TypeOf(&corev1.PersistentVolume{}):      values(objs.Volumes),
		reflect.TypeOf(&storagev1.StorageClass{}):       values(objs.Classes),
		reflect.TypeOf(&storagev1.CSINode{}):            values(objs.CSINodes),
		reflect.TypeOf(&storagev1.CSIDriver{}):          values(objs.Drivers),
		claimType:                                       h.claims.of(objs.ResourceClaims),
		reflect.TypeOf(&resourcev1.ResourceSlice{}):     values(objs.Slices),
		reflect.TypeOf(&resourcev1.DeviceClass{}):       values(objs.DeviceClasses),
		reflect.TypeOf(&resourcev1.DeviceTaintRule{}):   values(objs.DeviceTaintRules),
	}
	for t, list := range fill {
		var release func(runtime.Object) bool
		if t == claimType {
			release = claimReleased
		}
		if err := h.informers[t].replace(list, release); err != nil {
			return fmt.Errorf("loading %s objects: %w", t.Elem().Name(), err)
		}
	}
	h.objects, h.generation = objs, objs.Generation()
	return nil
}

func values[T runtime.Object](m map[string]T) []runtime.Object {
	out := make([]runtime.Object, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

var (
	defaultOnce sync.Once
	defaultHost *Host
	defaultErr  error
)

// Default returns a Host with the default profile's plugin arguments, shared.
func Default() (*Host, error) {
	defaultOnce.Do(func() { defaultHost, defaultErr = New(Options{}) })
	return defaultHost, defaultErr
}

// Use makes h evaluate the filters for placements on snap and its copies.
func Use(snap *cluster.Snapshot, h *Host) { snap.SetFilters(h) }

// HostOf returns the Host for placements on snap: the one Use set, or Default.
func HostOf(snap *cluster.Snapshot) (*Host, error) {
	if h, ok := snap.Filters().(*Host); ok && h != nil {
		return h, nil
	}
	return Default()
}
