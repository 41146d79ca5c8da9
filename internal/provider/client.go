package provider

import (
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kube"
)

// The client makes every change an apply makes: it implements the
// executor's interfaces without importing the executor (the provider, which
// knows both, checks that it does).
var (
	_ execute.Changes         = (*kube.Client)(nil)
	_ execute.DirectoryCopies = (*kube.Client)(nil)
	_ execute.Merges          = (*kube.Client)(nil)
	_ execute.Splits          = (*kube.Client)(nil)
)
