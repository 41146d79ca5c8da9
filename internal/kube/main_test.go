package kube

import (
	"os"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

func TestMain(m *testing.M) { os.Exit(acctest.Run(m, testcluster.Options{ControllerManager: true})) }
