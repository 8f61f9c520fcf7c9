"""audiopd.train"""
