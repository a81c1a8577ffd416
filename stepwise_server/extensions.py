"""Placeholder: routes of this part are being written."""

from fastapi import APIRouter

router = APIRouter()
