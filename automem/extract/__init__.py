"""The extraction pipeline: transcript preparation, the prompt, the LLM backends, tolerant parsing, the offline
rules extractor, the durable spool and its drainers. Candidates it finds enter the store through the core's
write path.

May import: automem.core and everything below it (config, log, text, paths, errors).
"""
