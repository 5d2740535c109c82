"""Test harness: real Kafka per test run, real clients, Java tools as subprocesses."""
