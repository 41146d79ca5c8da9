package migration

import (
	"encoding/json"
	"fmt"
	"slices"
)

// MovedFromAnnotation, on the shared claim of the shared layout, lists
// the templates of the directories homes had under earlier settings that
// on_layout_change = "move" left to be renamed at each user's next spawn
// (kubespawner.SchemeFree templates, which any slug scheme expands
// alike), as a JSON array in the order they were added. It only grows:
// nothing tells when every user has spawned, and a home left at an
// earlier place is found there however many changes later.
const MovedFromAnnotation = "jupyter-infra.github.io/home-moved-from"

// LeftAtAnnotation, on the shared claim, lists the templates of the
// directories homes were left at, unmounted, by on_layout_change = "keep"
// (scheme-free, in the form of MovedFromAnnotation). Nothing renames from
// them; no later template may give a user one of them (it may be another
// user's home). It only grows.
const LeftAtAnnotation = "jupyter-infra.github.io/home-left-at"

// DecodeMovedFrom reads MovedFromAnnotation's value; "" is none.
func DecodeMovedFrom(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON array of templates: %w", MovedFromAnnotation, err)
	}
	return out, nil
}

// EncodeMovedFrom is MovedFromAnnotation's value for templates.
func EncodeMovedFrom(templates []string) string {
	b, _ := json.Marshal(templates)
	return string(b)
}

// WithMovedFrom is list with the templates of more it lacks appended.
func WithMovedFrom(list []string, more ...string) []string {
	out := slices.Clone(list)
	for _, t := range more {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
