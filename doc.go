// Command terraform-provider-jupyter is the jupyter provider's plugin: it
// serves internal/provider over the plugin protocol (version 6) to
// Terraform and OpenTofu. DESIGN.md maps the code.
package main
