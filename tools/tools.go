//go:build tools

// Package tools pins the documentation generator.
package tools

import _ "github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs"
