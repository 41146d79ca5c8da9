package main

import "testing"

func TestQuietUnlessLogged(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want map[string]string // variables expected afterwards ("" = unset)
	}{
		{"no log kept", map[string]string{},
			map[string]string{"TF_LOG_SDK": "OFF", "TF_LOG_SDK_PROTO": "OFF", "TF_LOG_SDK_FRAMEWORK": "OFF", "TF_LOG_PROVIDER": "OFF", "TF_LOG_PROVIDER_JUPYTER": "OFF"}},
		{"TF_LOG set", map[string]string{"TF_LOG": "debug"},
			map[string]string{"TF_LOG_SDK": "", "TF_LOG_SDK_FRAMEWORK": "", "TF_LOG_PROVIDER": ""}},
		{"TF_LOG_PROVIDER set", map[string]string{"TF_LOG_PROVIDER": "trace"},
			map[string]string{"TF_LOG_SDK": "", "TF_LOG_PROVIDER": "trace"}},
		{"explicit level kept", map[string]string{"TF_LOG_SDK_PROTO": "debug"},
			map[string]string{"TF_LOG_SDK_PROTO": "debug", "TF_LOG_SDK": "OFF"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range c.env {
				env[k] = v
			}
			quietUnlessLogged(func(k string) string { return env[k] }, func(k, v string) error { env[k] = v; return nil })
			for k, v := range c.want {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
		})
	}
}
