// Command testcluster runs a Kubernetes control plane for end-to-end tests on 127.0.0.1: embedded etcd, the real
// kube-apiserver and kube-controller-manager (v1.36.3, linked as libraries) and simulated nodes.
//
//	testcluster up --dir DIR [--nodes N]   start in the background; returns once DIR/kubeconfig is usable
//	testcluster down --dir DIR             stop the cluster started in DIR and wait until it is gone
//	testcluster serve --dir DIR [--nodes N] run in the foreground (what up starts), until SIGTERM or SIGINT
//
// Exit codes: 0 done, 2 bad usage, 1 the cluster failed to start or stop (the log is DIR/testcluster.log).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"kplace/oracle/internal/cluster"
)

const usage = `usage: testcluster up|down|serve --dir DIR [flags]
  up     start the cluster in the background; returns once DIR/kubeconfig is usable
  down   stop the cluster running in DIR
  serve  run the cluster in the foreground until SIGTERM or SIGINT (what up starts)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet("testcluster "+cmd, flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for the cluster's data, credentials, kubeconfig, pid and log (required)")
	nodes := fs.Int("nodes", 3, "simulated nodes to create (up, serve)")
	cpu := fs.String("node-cpu", "16", "CPU capacity of each simulated node")
	memory := fs.String("node-memory", "64Gi", "memory capacity of each simulated node")
	pods := fs.String("node-pods", "110", "pod capacity of each simulated node")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long starting (up, serve) or stopping (down) may take")
	verbosity := fs.Int("v", 0, "log verbosity of the components (serve)")
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	if *dir == "" || fs.NArg() > 0 || *nodes < 0 {
		fmt.Fprintf(os.Stderr, "testcluster %s: --dir is required, --nodes must be >= 0, no arguments\n%s", cmd, usage)
		os.Exit(2)
	}
	var err error
	switch cmd {
	case "up":
		err = up(*dir, append([]string{"serve"}, args...), *timeout)
	case "down":
		err = down(*dir, *timeout)
	case "serve":
		flags := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(flags)
		_ = flags.Set("v", strconv.Itoa(*verbosity))
		err = serve(cluster.Options{Dir: *dir, Nodes: *nodes, StartTimeout: *timeout,
			Shape: cluster.NodeShape{CPU: *cpu, Memory: *memory, Pods: *pods}})
	default:
		fmt.Fprintf(os.Stderr, "testcluster: unknown command %q\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testcluster %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

func serve(o cluster.Options) error {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	pidFile := filepath.Join(o.Dir, cluster.PIDFile)
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(pidFile)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return cluster.Serve(ctx, o)
}

// up starts `testcluster serve` detached (its own session, output in DIR/testcluster.log) and waits for its
// kubeconfig. If serve exits first, or the timeout passes, the log's tail is the error.
func up(dir string, serveArgs []string, timeout time.Duration) error {
	if pid, ok := running(dir); ok {
		return fmt.Errorf("%s: a cluster is already running there (pid %d); run `testcluster down --dir %s`",
			dir, pid, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, cluster.KubeconfigFile)
	_ = os.Remove(kubeconfig)
	logPath := filepath.Join(dir, cluster.LogFile)
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(self, serveArgs...)
	child.Stdout, child.Stderr = log, log
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	deadline := time.After(timeout)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("the cluster stopped while starting (%v); %s ends with:\n%s", err, logPath, tail(logPath))
		case <-deadline:
			_ = child.Process.Signal(syscall.SIGTERM)
			return fmt.Errorf("the cluster was not ready after %s; %s ends with:\n%s", timeout, logPath, tail(logPath))
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := os.Stat(kubeconfig); err == nil {
			fmt.Println(kubeconfig)
			return nil
		}
	}
}

// down sends SIGTERM to the cluster's process and waits until it has exited.
func down(dir string, timeout time.Duration) error {
	pid, ok := running(dir)
	if !ok {
		_ = os.Remove(filepath.Join(dir, cluster.PIDFile))
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fmt.Errorf("pid %d did not stop within %s and was killed", pid, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = os.Remove(filepath.Join(dir, cluster.PIDFile))
	return nil
}

// running reads DIR/pid and says whether that process is alive and is a testcluster.
func running(dir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(dir, cluster.PIDFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 || !alive(pid) {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err == nil && !strings.Contains(string(cmdline), "testcluster") {
		return 0, false // the pid was reused by another program
	}
	return pid, true
}

// alive: the process exists and is not a zombie (a reparented child whose parent does not reap it).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}

func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		lines = append(lines, scanner.Text())
		if len(lines) > 20 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
