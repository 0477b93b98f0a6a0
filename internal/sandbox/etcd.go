package sandbox

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// etcdStartTimeout bounds how long embedded etcd may take to become ready.
const etcdStartTimeout = 30 * time.Second

// startEtcd starts a single-member etcd on free 127.0.0.1 ports with its data in a
// new temporary directory, which stopEtcd removes. A port taken between choosing
// and binding it is retried with new ports.
func startEtcd() (*embed.Etcd, error) {
	var lastErr error
	for range 3 {
		e, err := tryStartEtcd()
		if err == nil {
			return e, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// tryStartEtcd makes one attempt of startEtcd.
func tryStartEtcd() (*embed.Etcd, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "muster-sandbox-etcd")
	if err != nil {
		return nil, fmt.Errorf("creating etcd data dir: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true
	client := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peer := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		stopEtcd(e)
		return nil, fmt.Errorf("starting etcd: %w", err)
	case <-time.After(etcdStartTimeout):
		stopEtcd(e)
		return nil, fmt.Errorf("starting etcd: expected ready within %s, found it still starting", etcdStartTimeout)
	}
}

// stopEtcd stops e and removes its data directory.
func stopEtcd(e *embed.Etcd) {
	e.Close()
	_ = os.RemoveAll(e.Config().Dir)
}
