package main

import "github.com/spf13/cobra"

func newSessionCmd(a *app) *cobra.Command {
	return newGroupCmd("session", "Create and inspect sessions",
		"Create root sessions and ordinary forks, and read any session's header, summary and event log.",
		newSessionNewCmd(a),
		newSessionShowCmd(a),
		newSessionEventsCmd(a),
		newSessionForkCmd(a),
		newSessionLsCmd(a),
	)
}
