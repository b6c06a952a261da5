// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// @notice A Hyperlane recipient whose `handle` burns about `rounds` × 100 gas (a hostile
/// recipient making its delivery expensive): the relayer's transactionGasLimit must refuse it.
contract GasBurner {
    uint256 public immutable rounds;
    bytes32 public last;

    constructor(uint256 rounds_) {
        rounds = rounds_;
    }

    function handle(uint32, bytes32, bytes calldata) external payable {
        bytes32 h = last;
        for (uint256 i = 0; i < rounds; i++) {
            h = keccak256(abi.encode(h, i));
        }
        last = h;
    }
}
