"""audiopd.model"""
