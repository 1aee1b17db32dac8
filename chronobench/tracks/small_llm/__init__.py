"""Small language models on CPU (``experiment=llm_cpu``): a board section over
benchmark cells."""
