"""Test support: the scripted fake LLM server and helpers shared by the test modules."""
