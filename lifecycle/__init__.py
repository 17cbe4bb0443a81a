"""The run of an episode, in the order it happens: start -> worker -> follow
(the episode store, its events and the job queue they use are in storage/).

services.py builds what a process reaches Redis through; settings.py is what every process reads.
"""
