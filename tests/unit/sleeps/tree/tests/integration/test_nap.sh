#!/usr/bin/env bash
# A test that waits for a fixed time (scripts/check-test-sleeps must refuse it).
start_job
sleep 1
check_job
