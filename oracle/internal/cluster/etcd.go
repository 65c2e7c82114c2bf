package cluster

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// StartEtcd starts a single-member etcd in this process, its data under dir/etcd, listening on 127.0.0.1 only.
// fsync is off: the data lives as long as the test cluster. It returns once the member serves clients.
func StartEtcd(dir string, timeout time.Duration) (*embed.Etcd, string, error) {
	cfg := embed.NewConfig()
	cfg.Name = "testcluster"
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{"stderr"}
	cfg.UnsafeNoFsync = true
	clientURL, err := loopbackURL()
	if err != nil {
		return nil, "", err
	}
	peerURL, err := loopbackURL()
	if err != nil {
		return nil, "", err
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, clientURL.String(), nil
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd: %w", err)
	case <-time.After(timeout):
		e.Close()
		return nil, "", fmt.Errorf("etcd: not ready after %s", timeout)
	}
}

// loopbackURL is http://127.0.0.1:PORT for a port that was free a moment ago.
func loopbackURL() (url.URL, error) {
	port, err := freePort()
	if err != nil {
		return url.URL{}, err
	}
	return url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
