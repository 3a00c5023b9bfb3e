"""The core: a memory, the store (embedded Chroma or a Chroma server), visibility, embeddings, the write path
(duplicate / update / new) and recall. It knows nothing of Hermes or of extraction.

May import: automem.config, automem.log, automem.text, automem.paths, automem.errors (and itself).
"""
