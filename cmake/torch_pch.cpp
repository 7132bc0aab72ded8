// SPDX-License-Identifier: Apache-2.0
// The translation unit that builds the shared LibTorch precompiled header (cmake/TorchTargets.cmake).
