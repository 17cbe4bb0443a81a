"""The run of an episode, in the order it happens: start -> jobs -> worker -> transitions -> follow.

services.py builds what a process reaches Redis through; settings.py is what every process reads.
"""
