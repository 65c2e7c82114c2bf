// Command kube-scheduler is the real kube-scheduler of the oracle's Kubernetes version, unchanged: its own
// command (k8s.io/kubernetes/cmd/kube-scheduler/app) linked as a Go module. The end-to-end tests run it against
// the test cluster, beside kplace or with kplace as its extender.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
