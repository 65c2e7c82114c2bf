// Command kube-oracle schedules the pending pods of a cluster state with the
// real kube-scheduler, one cycle per pod, and prints one JSON object per cycle.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/go-logr/logr"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	"kplace/oracle/internal/sim"
	"kplace/oracle/internal/state"
)

const usage = `usage:
  kube-oracle schedule STATE... [--config FILE] [--lockstep PLAN] [--feature-gates K=V,...] [--parallelism N] [--no-record] [--timeout D] [-v N]
  kube-oracle version
`

// exitError carries an exit code.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func inputErr(format string, a ...any) error {
	return &exitError{code: 2, msg: fmt.Sprintf(format, a...)}
}

func main() {
	err := run(os.Args[1:], os.Stdout)
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintln(os.Stderr, "kube-oracle: error: "+strings.ReplaceAll(err.Error(), "\n", " "))
	os.Exit(code)
}

func run(args []string, stdout io.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return &exitError{code: 2, msg: "missing command"}
	}
	switch args[0] {
	case "version":
		fmt.Fprintln(stdout, kubeVersion())
		return nil
	case "schedule":
		return schedule(args[1:], stdout)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(os.Stderr, usage)
	return inputErr("unknown command %q", args[0])
}

func kubeVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/kubernetes" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func schedule(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("schedule", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configFile := fs.String("config", "", "KubeSchedulerConfiguration file")
	planFile := fs.String("lockstep", "", "kplace plan JSON to follow when kube ties")
	gates := fs.String("feature-gates", "", "feature gates, e.g. OpportunisticBatching=false")
	par := fs.Int("parallelism", 1, "scheduler parallelism (1 = deterministic evaluation order; 0 = from config)")
	noRecord := fs.Bool("no-record", false, "report only choices and timings, not filters and scores (for speed)")
	timeout := fs.Duration("timeout", 0, "bound for every wait (default 60s)")
	verbosity := fs.Int("v", -1, "klog verbosity (default: logging off)")

	// Allow flags after positional arguments.
	var files []string
	rest := args
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			return inputErr("%v", err)
		}
		rest = fs.Args()
		if len(rest) > 0 {
			files = append(files, rest[0])
			rest = rest[1:]
		}
	}
	if len(files) == 0 {
		return inputErr("schedule: no STATE file given")
	}

	setupLogging(*verbosity)
	if *gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(*gates); err != nil {
			return inputErr("--feature-gates: %v", err)
		}
	}
	cfg, err := loadConfig(*configFile)
	if err != nil {
		return err
	}
	st, err := state.Load(files)
	if err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	var plan map[string]string
	if *planFile != "" {
		if plan, err = loadPlan(*planFile); err != nil {
			return err
		}
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	ctx := klog.NewContext(context.Background(), klog.Background())
	err = sim.Run(ctx, st, sim.Options{Config: cfg, Plan: plan, Parallelism: int32(*par), Out: out, Timeout: *timeout,
		NoRecord: *noRecord})
	var ce *sim.ConfigError
	if errors.As(err, &ce) {
		name := *configFile
		if name == "" {
			name = "default configuration"
		}
		return inputErr("%s: %v", name, ce)
	}
	return err
}

func setupLogging(v int) {
	if v < 0 {
		klog.SetLogger(logr.Discard())
		return
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", fmt.Sprint(v))
}

// loadConfig decodes and defaults a KubeSchedulerConfiguration exactly as
// kube-scheduler's --config does, or returns the default configuration.
func loadConfig(file string) (*config.KubeSchedulerConfiguration, error) {
	var cfg *config.KubeSchedulerConfiguration
	if file == "" {
		c, err := latest.Default()
		if err != nil {
			return nil, err
		}
		cfg = c
	} else {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, inputErr("%s: %v", file, err)
		}
		obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
		if err != nil {
			return nil, inputErr("%s: %v", file, err)
		}
		c, ok := obj.(*config.KubeSchedulerConfiguration)
		if !ok {
			return nil, inputErr("%s: not a KubeSchedulerConfiguration (got %s)", file, gvk)
		}
		c.TypeMeta.APIVersion = gvk.GroupVersion().String()
		cfg = c
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		name := file
		if name == "" {
			name = "default configuration"
		}
		return nil, inputErr("%s: invalid configuration: %v", name, err)
	}
	return cfg, nil
}

// loadPlan reads kplace's plan JSON into pod -> node ("" = unplaced).
func loadPlan(file string) (map[string]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, inputErr("%s: %v", file, err)
	}
	var p struct {
		Placements []struct {
			Pod  string  `json:"pod"`
			Node *string `json:"node"`
		} `json:"placements"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, inputErr("%s: %v", file, err)
	}
	plan := map[string]string{}
	for i, pl := range p.Placements {
		if pl.Pod == "" {
			return nil, inputErr("%s: placements[%d]: missing pod", file, i)
		}
		if !strings.Contains(pl.Pod, "/") {
			pl.Pod = "default/" + pl.Pod
		}
		if pl.Node != nil {
			plan[pl.Pod] = *pl.Node
		} else {
			plan[pl.Pod] = ""
		}
	}
	return plan, nil
}
