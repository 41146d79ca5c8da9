// Package parallel runs calls to the API server with bounded concurrency,
// and stops starting new ones once the API server cannot be reached
// (ForEach). The client (creates of many claims) and the executor use it.
package parallel
