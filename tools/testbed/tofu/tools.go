//go:build tools

// Package tofu pins the OpenTofu command for the test bed.
package tofu

import _ "github.com/opentofu/opentofu/cmd/tofu"
