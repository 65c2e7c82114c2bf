"""Everything that decides: the plugin framework, the plugins, the engines, the verifier, the CLI."""

KUBE_SCHEDULER = "v1.36.3"  # the kube-scheduler release the greedy engine reproduces (checked against oracle/)
