// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// @notice A Hyperlane recipient whose `handle` reverts while it is armed: armed after the
/// relayer estimated `process` and before its transaction is mined, the transaction is mined and
/// reverts (the gas it used is spent, the message not delivered).
contract RevertSwitch {
    bool public armed;

    function arm(bool on) external {
        armed = on;
    }

    function handle(uint32, bytes32, bytes calldata) external payable {
        require(!armed, "RevertSwitch: armed");
    }
}
